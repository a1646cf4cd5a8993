/**
 * What the user is told when a request fails, and what is fetched again so
 * the page shows what the server has now (a conversation gone, its session
 * gone, a turn still running, no model any more).
 */
import { formatBytes } from '../../../src/protocol/index';
import { ApiError } from '../api';
import { GONE_MESSAGE } from './conversations';
import type { Notice } from './notices';

export interface ErrorReporterOptions {
  notify: (text: string, kind?: Notice['kind']) => void;
  drop: (id: string, message?: string) => void;
  refreshConversation: (id: string) => Promise<unknown>;
  /** Loads the server's config again. */
  reload: () => Promise<void>;
  maxUploadBytes: number | undefined;
}

/** Reports a failed request about conversation `id` (undefined: none yet). */
export function errorReporter({ notify, drop, refreshConversation, reload, maxUploadBytes }: ErrorReporterOptions) {
  return (id: string | undefined, error: unknown): void => {
    if (!(error instanceof ApiError)) {
      notify((error as Error).message ?? String(error));
      return;
    }
    if (error.status === 401) notify('Sign in, then try again.', 'info');
    else if (error.status === 404 && id && error.code === 'conversation-not-found') {
      drop(id, GONE_MESSAGE);
    } else if (error.status === 410 && id) {
      notify("This conversation's session is gone: continue it in a new session to go on.");
      void refreshConversation(id);
    } else if (error.code === 'conversation-busy' && id) {
      notify('Something is still running in this conversation: wait for it or stop it.');
      void refreshConversation(id);
    } else if (error.code === 'model-not-configured') {
      notify(error.message);
      void reload();
    } else if (error.status === 413) {
      notify(`Too large for the server (it accepts up to ${formatBytes(maxUploadBytes ?? 0)}): ${error.message}`);
    } else notify(error.message);
  };
}
