/** Asks for the API key when the server answers 401. */
import { useEffect, useRef, useState } from 'preact/hooks';

export interface LoginDialogProps {
  error?: string;
  onSubmit: (key: string, remember: boolean) => Promise<void>;
}

export function LoginDialog({ error, onSubmit }: LoginDialogProps) {
  const [key, setKey] = useState('');
  const [remember, setRemember] = useState(false);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    input.current?.focus();
  }, []);

  useEffect(() => {
    if (error) input.current?.select();
  }, [error]);

  return (
    <div class="modal-backdrop">
      <div class="modal" role="dialog" aria-modal="true" aria-labelledby="login-title" aria-describedby="login-help">
        <form
          onSubmit={async (event) => {
            event.preventDefault();
            if (!key.trim() || busy) return;
            setBusy(true);
            try {
              await onSubmit(key.trim(), remember);
            } finally {
              setBusy(false);
            }
          }}
        >
          <h2 id="login-title">Sign in to sandcell</h2>
          <p id="login-help" class="muted">
            This server needs an API key. Ask whoever runs it, or see the keys given to{' '}
            <code>sandcell serve --api-key</code> / <code>SANDCELL_API_KEYS</code>.
          </p>
          <label class="field">
            <span>API key</span>
            <input
              ref={input}
              type="password"
              autocomplete="current-password"
              value={key}
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? 'login-error' : undefined}
              onInput={(event) => setKey((event.currentTarget as HTMLInputElement).value)}
            />
          </label>
          {error ? (
            <p id="login-error" class="form-error" role="alert">
              {error}
            </p>
          ) : null}
          <label class="checkbox">
            <input
              type="checkbox"
              checked={remember}
              onChange={(event) => setRemember((event.currentTarget as HTMLInputElement).checked)}
            />
            <span>Remember on this device</span>
          </label>
          <div class="modal-actions">
            <button type="submit" class="button-primary" disabled={busy || !key.trim()}>
              {busy ? 'Checking…' : 'Sign in'}
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}
