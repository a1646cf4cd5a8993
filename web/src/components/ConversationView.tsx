/** The main area: the conversation's header, notices, history, and the chat box or notebook cell. */

import { useRef, useState } from 'preact/hooks';
import type { ApprovalMode, Conversation } from '../../../src/protocol/index';
import type { ListeningPort, ServerConfig } from '../api';
import { useFollowOutput } from '../follow-output';
import { formatTime } from '../format';
import type { CellLanguage } from '../languages';
import { AppsBar } from './AppsBar';
import type { Decision } from './CodeStep';
import { CellComposer, ChatComposer } from './Composer';
import { Markdown } from './Html';
import { ArrowDownIcon, BrandMark, DownloadIcon, FilesIcon, MenuIcon, TerminalIcon } from './Icons';
import { TurnView } from './Turn';

export type Mode = 'chat' | 'notebook';

export interface ConversationViewProps {
  conversation: Conversation | undefined;
  config: ServerConfig | null;
  mode: Mode;
  onModeChange: (mode: Mode) => void;
  approval: ApprovalMode;
  onApprovalChange: (mode: ApprovalMode) => void;
  busy: boolean;
  filesOpen: boolean;
  onToggleFiles: () => void;
  /** The terminal pane: open or not, and whether the conversation has a live session to open one in. */
  terminalOpen: boolean;
  terminalAvailable: boolean;
  onToggleTerminal: () => void;
  /** Opens the conversation list where it is a drawer (narrow screens). */
  onOpenDrawer: () => void;
  drawerOpen: boolean;
  onSend: (text: string) => Promise<boolean>;
  onRunCell: (code: string, language: CellLanguage) => Promise<boolean>;
  onStop: () => void;
  onDecide: (approvalId: string, decision: Decision, code?: string) => Promise<void>;
  onUpload: (files: File[]) => void;
  onExport: () => void;
  onNew: () => void;
  onError: (message: string) => void;
  /** Starts a new conversation that goes on from this expired one (its history given to the model). */
  onContinue: () => void;
  /** The apps the session serves (its listening ports), the one previewed beside the chat, and how to open each. */
  ports: ListeningPort[];
  previewing: number | undefined;
  onPreview: (port: number) => void;
  onOpenTab: (port: number) => void;
}

export function ConversationView(props: ConversationViewProps) {
  const { conversation, config, mode, busy } = props;
  const expired = conversation?.status === 'expired';
  const noModel = config !== null && config.model === null;
  const scroller = useRef<HTMLDivElement>(null);
  const [dragging, setDragging] = useState(0);
  const [preset, setPreset] = useState<{ code: string; language?: CellLanguage; serial: number }>();
  // The newest output stays in view (an answer, a cell, a chart loading late) until the user scrolls up to read;
  // another conversation, or a new turn (the user asked or ran something), starts at the end again.
  const { following, jumpToEnd } = useFollowOutput(scroller, {
    restartKey: `${conversation?.id}/${conversation?.turns.length ?? 0}`,
  });

  const expiredText = expired
    ? `This conversation's session expired${conversation?.expiredAt ? ` at ${formatTime(conversation.expiredAt)}` : ''}${
        conversation?.expiredReason ? ` (it ${conversation.expiredReason})` : ''
      }: its variables and files are gone. The history stays readable and can be exported. Continuing starts a new session with this history as context; nothing is re-run.`
    : undefined;
  const chatDisabled = expired
    ? 'This conversation is read-only: continue it in a new session to ask more.'
    : noModel
      ? 'No model is configured on the server, so questions cannot be answered. Notebook cells still run.'
      : undefined;
  const cellDisabled = expired
    ? 'This conversation is read-only: continue it in a new session to run code.'
    : undefined;
  const uploadDisabled = expired ? 'This conversation has expired.' : undefined;

  const hasFiles = (event: DragEvent) => Array.from(event.dataTransfer?.types ?? []).includes('Files');

  return (
    <main
      class="main"
      aria-label={conversation?.title || 'New conversation'}
      onDragEnter={(event) => {
        if (!hasFiles(event) || expired) return;
        event.preventDefault();
        setDragging((count) => count + 1);
      }}
      onDragOver={(event) => {
        if (!hasFiles(event) || expired) return;
        event.preventDefault();
        if (event.dataTransfer) event.dataTransfer.dropEffect = 'copy';
      }}
      onDragLeave={(event) => {
        if (!hasFiles(event) || expired) return;
        setDragging((count) => Math.max(0, count - 1));
      }}
      onDrop={(event) => {
        if (!hasFiles(event) || expired) return;
        event.preventDefault();
        setDragging(0);
        const files = Array.from(event.dataTransfer?.files ?? []);
        if (files.length > 0) props.onUpload(files);
      }}
    >
      <header class="main-header">
        <div class="heading-row">
          <button
            type="button"
            class="icon-button drawer-toggle"
            aria-label="Conversations"
            aria-controls="sidebar"
            aria-expanded={props.drawerOpen}
            onClick={props.onOpenDrawer}
          >
            <MenuIcon />
          </button>
          <h1 class="conversation-heading">{conversation?.title || 'New conversation'}</h1>
        </div>
        <div class="header-controls">
          <div class="segmented" role="tablist" aria-label="Mode">
            {(['chat', 'notebook'] as const).map((value) => (
              <button
                key={value}
                type="button"
                role="tab"
                aria-selected={mode === value}
                class={mode === value ? 'is-active' : ''}
                onClick={() => props.onModeChange(value)}
                onKeyDown={(event) => {
                  if (event.key === 'ArrowRight' || event.key === 'ArrowLeft') {
                    event.preventDefault();
                    const next = value === 'chat' ? 'notebook' : 'chat';
                    props.onModeChange(next);
                    const parent = (event.currentTarget as HTMLElement).parentElement;
                    parent?.querySelector<HTMLButtonElement>(`[data-mode="${next}"]`)?.focus();
                  }
                }}
                data-mode={value}
                tabIndex={mode === value ? 0 : -1}
              >
                {value === 'chat' ? 'Chat' : 'Notebook'}
              </button>
            ))}
          </div>
          {mode === 'chat' ? (
            <label class="switch" title="Ask before each piece of code runs">
              <input
                type="checkbox"
                role="switch"
                aria-checked={props.approval === 'ask'}
                checked={props.approval === 'ask'}
                onChange={(event) =>
                  props.onApprovalChange((event.currentTarget as HTMLInputElement).checked ? 'ask' : 'auto')
                }
              />
              <span class="switch-track" aria-hidden="true" />
              <span>Approve code</span>
            </label>
          ) : null}
          <button
            type="button"
            class={`button-secondary files-toggle${props.filesOpen ? ' is-pressed' : ''}`}
            aria-pressed={props.filesOpen}
            onClick={props.onToggleFiles}
          >
            <FilesIcon />
            <span class="files-label">Files</span>
          </button>
          <button
            type="button"
            class={`button-secondary terminal-toggle${props.terminalOpen ? ' is-pressed' : ''}`}
            aria-pressed={props.terminalOpen}
            disabled={!props.terminalAvailable}
            title={props.terminalAvailable ? 'A shell in this session' : 'This conversation has no live session'}
            onClick={props.onToggleTerminal}
          >
            <TerminalIcon />
            <span class="terminal-label">Terminal</span>
          </button>
          <button
            type="button"
            class="button-secondary export-button"
            disabled={!conversation || conversation.turns.length === 0}
            onClick={props.onExport}
            title="Download this conversation as a Jupyter notebook"
          >
            <DownloadIcon size={16} />
            <span class="export-label">Export .ipynb</span>
          </button>
        </div>
      </header>

      {noModel ? (
        <div class="banner banner-info" role="status">
          <strong>No model is configured.</strong>{' '}
          {mode === 'chat'
            ? 'Chat needs one to answer questions; the Notebook tab runs Python without one.'
            : 'Notebook mode works without one: run Python in the cell below.'}
          {config?.modelHelp ? (
            <details class="model-help">
              <summary>How to configure a model</summary>
              <Markdown text={config.modelHelp} />
            </details>
          ) : null}
        </div>
      ) : null}
      {expiredText ? (
        <div class="banner banner-warning" role="status">
          <span>{expiredText}</span>
          <button type="button" class="button-primary small" onClick={props.onContinue}>
            Continue in a new session
          </button>
          <button type="button" class="small" onClick={props.onNew}>
            New conversation
          </button>
        </div>
      ) : null}
      {conversation?.continuedFrom ? (
        <div class="banner banner-info" role="note">
          Continued from “{conversation.continuedFrom.title}” in a new session: nothing from it was re-run, so its
          variables and files are not here (upload files again if you need them).
          {noModel ? null : ' The model was given its history.'}
        </div>
      ) : null}

      <AppsBar
        ports={props.ports}
        previewing={props.previewing}
        onPreview={props.onPreview}
        onOpenTab={props.onOpenTab}
      />

      <div class="transcript-frame">
        {/* Focusable (not in the tab order) so "Jump to latest" can leave the keyboard's focus there. */}
        <div class="transcript" ref={scroller} tabIndex={-1}>
          <div class="transcript-inner">
            {conversation?.droppedTurns ? (
              <p class="turn-note history-note" role="note">
                {conversation.droppedTurns === 1
                  ? 'The earliest turn was'
                  : `The ${conversation.droppedTurns} earliest turns were`}{' '}
                dropped to keep this conversation within the server's memory limit.
              </p>
            ) : null}
            {!conversation || conversation.turns.length === 0 ? (
              <EmptyState mode={mode} noModel={noModel} onOpenNotebook={() => props.onModeChange('notebook')} />
            ) : (
              conversation.turns.map((turn) => (
                <TurnView
                  key={turn.id}
                  turn={turn}
                  onDecide={props.onDecide}
                  onError={props.onError}
                  onEditInCell={(code, language) => {
                    props.onModeChange('notebook');
                    setPreset((current) => ({ code, language, serial: (current?.serial ?? 0) + 1 }));
                  }}
                />
              ))
            )}
          </div>
        </div>
        {following ? null : (
          <button
            type="button"
            class="jump-to-latest"
            onClick={() => {
              jumpToEnd();
              scroller.current?.focus({ preventScroll: true });
            }}
          >
            <ArrowDownIcon />
            Jump to latest
          </button>
        )}
      </div>

      <div class="composer-area">
        {mode === 'chat' ? (
          <ChatComposer
            disabledReason={chatDisabled}
            busy={busy}
            onSend={props.onSend}
            onStop={props.onStop}
            onPickFiles={props.onUpload}
            uploadDisabledReason={uploadDisabled}
          />
        ) : (
          <CellComposer
            disabledReason={cellDisabled}
            busy={busy}
            onRun={props.onRunCell}
            onStop={props.onStop}
            onPickFiles={props.onUpload}
            uploadDisabledReason={uploadDisabled}
            preset={preset}
          />
        )}
      </div>

      {dragging > 0 ? (
        <div class="drop-overlay" aria-hidden="true">
          <div class="drop-card">Drop files to add them to /mnt/data</div>
        </div>
      ) : null}
    </main>
  );
}

function EmptyState({ mode, noModel, onOpenNotebook }: { mode: Mode; noModel: boolean; onOpenNotebook: () => void }) {
  return (
    <div class="empty-state">
      <div class="empty-mark">
        <BrandMark size={44} />
      </div>
      {mode === 'notebook' ? (
        <>
          <h2>Notebook</h2>
          <p>
            Type Python into the cell below and press <kbd>Ctrl</kbd>+<kbd>Enter</kbd> to run it. Variables are kept
            between cells; files you upload are in <code>/mnt/data</code>.
          </p>
        </>
      ) : noModel ? (
        <>
          <h2>No model to chat with</h2>
          <p>
            This server has no model configured, so questions here cannot be answered. You can still run Python yourself
            in the notebook, and files you drop here (or add with the paperclip) go to <code>/mnt/data</code> for it.
          </p>
          <button type="button" class="button-primary" onClick={onOpenNotebook}>
            Run code in the notebook
          </button>
        </>
      ) : (
        <>
          <h2>Analyse data in a sandbox</h2>
          <p>
            Drop a CSV, JSON or text file here (or use the paperclip), then ask a question. The model writes Python, it
            runs in a sandbox on this machine, and you see every step: the code, its output, tables and charts.
          </p>
        </>
      )}
    </div>
  );
}
