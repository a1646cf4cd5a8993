/** Where the user writes: the chat box (Enter sends, Shift+Enter newline) and the notebook cell (Ctrl+Enter runs). */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { CELL_LANGUAGES, type CellLanguage } from '../languages';
import { CodeEditor } from './CodeEditor';
import { PaperclipIcon, PlayIcon } from './Icons';

export interface ChatComposerProps {
  /** Why the user cannot send (no model, expired, …); undefined when they can. */
  disabledReason?: string;
  busy: boolean;
  onSend: (text: string) => Promise<boolean>;
  onStop: () => void;
  onPickFiles: (files: File[]) => void;
  uploadDisabledReason?: string;
}

const MAX_HEIGHT = 240;

function FilePicker({ onPick, disabledReason }: { onPick: (files: File[]) => void; disabledReason?: string }) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <>
      <input
        ref={input}
        type="file"
        multiple
        class="visually-hidden"
        tabIndex={-1}
        aria-hidden="true"
        data-testid="upload-input"
        onChange={(event) => {
          const element = event.currentTarget as HTMLInputElement;
          const files = Array.from(element.files ?? []);
          element.value = '';
          if (files.length > 0) onPick(files);
        }}
      />
      <button
        type="button"
        class="icon-button attach-button"
        aria-label="Upload data files"
        title={disabledReason ?? 'Upload data files (or drop them here)'}
        disabled={disabledReason !== undefined}
        onClick={() => input.current?.click()}
      >
        <PaperclipIcon />
      </button>
    </>
  );
}

export function ChatComposer({
  disabledReason,
  busy,
  onSend,
  onStop,
  onPickFiles,
  uploadDisabledReason,
}: ChatComposerProps) {
  const [text, setText] = useState('');
  const area = useRef<HTMLTextAreaElement>(null);

  useLayoutEffect(() => {
    const element = area.current;
    if (!element) return;
    element.style.height = 'auto';
    element.style.height = `${Math.min(element.scrollHeight, MAX_HEIGHT)}px`;
  }, [text]);

  const send = async () => {
    // The box's own value: an Enter that comes before the re-render of the last keystroke (a busy
    // machine, an automated fill) would otherwise see the text as it was one render ago, maybe empty.
    const content = (area.current?.value ?? text).trim();
    if (!content || busy || disabledReason) return;
    setText('');
    const started = await onSend(content);
    if (!started) setText((current) => current || content);
  };

  return (
    <form
      class="composer"
      onSubmit={(event) => {
        event.preventDefault();
        void send();
      }}
    >
      {disabledReason ? (
        <p class="composer-disabled" id="composer-reason">
          {disabledReason}
        </p>
      ) : null}
      <div class="composer-box">
        <FilePicker onPick={onPickFiles} disabledReason={uploadDisabledReason} />
        <textarea
          ref={area}
          rows={1}
          class="composer-input"
          value={text}
          placeholder={disabledReason ? '' : 'Ask about your data…'}
          aria-label="Your question"
          aria-describedby={disabledReason ? 'composer-reason' : 'composer-hint'}
          disabled={disabledReason !== undefined}
          onInput={(event) => setText((event.currentTarget as HTMLTextAreaElement).value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.isComposing && !event.altKey) {
              event.preventDefault();
              void send();
            }
          }}
        />
        {busy ? (
          <button type="button" class="button-stop" onClick={onStop} aria-label="Stop the running answer">
            <span class="stop-square" aria-hidden="true" /> Stop
          </button>
        ) : (
          <button
            type="submit"
            class="button-primary send-button"
            disabled={!text.trim() || disabledReason !== undefined}
            aria-label="Send"
          >
            Send
          </button>
        )}
      </div>
      {/* The keys, under the box rather than in the placeholder, which a phone's width would cut; none for a box that cannot send. */}
      {disabledReason ? null : (
        <p class="composer-hint muted" id="composer-hint">
          Enter sends · Shift+Enter for a new line
        </p>
      )}
    </form>
  );
}

export interface CellComposerProps {
  disabledReason?: string;
  busy: boolean;
  onRun: (code: string, language: CellLanguage) => Promise<boolean>;
  onStop: () => void;
  onPickFiles: (files: File[]) => void;
  uploadDisabledReason?: string;
  /** Code to put in the editor (from "Edit in a new cell"), with its language; the counter makes a repeat count. */
  preset?: { code: string; language?: CellLanguage; serial: number };
}

export function CellComposer({
  disabledReason,
  busy,
  onRun,
  onStop,
  onPickFiles,
  uploadDisabledReason,
  preset,
}: CellComposerProps) {
  const [code, setCode] = useState('');
  const [language, setLanguage] = useState<CellLanguage>('python');
  const wrapper = useRef<HTMLDivElement>(null);
  const choice = CELL_LANGUAGES.find((entry) => entry.value === language) ?? CELL_LANGUAGES[0]!;

  useEffect(() => {
    if (!preset) return;
    setCode(preset.code);
    setLanguage(preset.language ?? 'python');
    wrapper.current?.querySelector('textarea')?.focus();
  }, [preset]);

  const run = async () => {
    // The editor's own value, for the same reason as the chat box's send.
    const submitted = wrapper.current?.querySelector('textarea')?.value ?? code;
    if (!submitted.trim() || busy || disabledReason) return;
    setCode('');
    const started = await onRun(submitted, language);
    if (!started) setCode((current) => current || submitted);
  };

  return (
    <div class="composer cell-composer" ref={wrapper}>
      {disabledReason ? (
        <p class="composer-disabled" id="cell-reason">
          {disabledReason}
        </p>
      ) : null}
      <div class="cell-box">
        <div class="cell-gutter">
          <span class="cell-prompt" aria-hidden="true">
            In [ ]:
          </span>
          <select
            class="cell-language"
            aria-label="Cell language"
            value={language}
            onChange={(event) => setLanguage((event.currentTarget as HTMLSelectElement).value as CellLanguage)}
          >
            {CELL_LANGUAGES.map((entry) => (
              <option key={entry.value} value={entry.value}>
                {entry.label}
              </option>
            ))}
          </select>
        </div>
        <CodeEditor
          value={code}
          onInput={setCode}
          onRun={() => void run()}
          label={`${choice.label} cell (Ctrl+Enter runs it)`}
          placeholder={choice.placeholder}
          language={language}
          disabled={disabledReason !== undefined}
          describedBy={disabledReason ? 'cell-reason' : 'cell-hint'}
        />
      </div>
      <div class="cell-actions">
        <FilePicker onPick={onPickFiles} disabledReason={uploadDisabledReason} />
        {disabledReason ? null : (
          <span class="muted cell-hint" id="cell-hint">
            Ctrl+Enter runs · Tab indents (Esc, then Tab to leave)
          </span>
        )}
        {busy ? (
          <button type="button" class="button-stop" onClick={onStop} aria-label="Stop the running cell">
            <span class="stop-square" aria-hidden="true" /> Stop
          </button>
        ) : (
          <button
            type="button"
            class="button-primary"
            disabled={!code.trim() || disabledReason !== undefined}
            onClick={() => void run()}
          >
            Run <PlayIcon />
          </button>
        )}
      </div>
    </div>
  );
}
