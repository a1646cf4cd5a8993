/**
 * The conversations: new, select, delete; and who/what the server is. On a
 * narrow screen it is a drawer over the conversation (opened from the
 * header's menu button), so the conversation and its composer keep the screen.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ConversationSummary } from '../../../src/protocol/index';
import type { ServerConfig } from '../api';
import { formatDuration, formatTime } from '../format';
import { BrandMark, CloseIcon, TrashIcon } from './Icons';

export interface SidebarProps {
  conversations: ConversationSummary[];
  selectedId: string | null;
  config: ServerConfig | null;
  signedIn: boolean;
  /** Whether the drawer is open (it matters only where the sidebar is a drawer). */
  open: boolean;
  onClose: () => void;
  onNew: () => void;
  onSelect: (id: string) => void;
  onDelete: (id: string) => void;
  onSignOut: () => void;
}

export function Sidebar(props: SidebarProps) {
  const { conversations, selectedId, config, signedIn, open, onClose, onNew, onSelect, onDelete, onSignOut } = props;
  const [confirming, setConfirming] = useState<string>();

  useEffect(() => {
    if (!open) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') onClose();
    };
    window.addEventListener('keydown', onKey);
    document.querySelector<HTMLElement>('#sidebar .new-conversation')?.focus();
    return () => {
      window.removeEventListener('keydown', onKey);
      // Focus inside the closing drawer would be lost: give it back to the button that opened it.
      if (document.activeElement?.closest('#sidebar')) document.querySelector<HTMLElement>('.drawer-toggle')?.focus();
    };
  }, [open, onClose]);

  return (
    <>
      <div class="drawer-scrim" aria-hidden="true" onClick={onClose} />
      <nav class="sidebar" id="sidebar" aria-label="Conversations">
        <div class="brand">
          <BrandMark />
          <span class="brand-name">sandcell</span>
          <button
            type="button"
            class="icon-button drawer-close"
            aria-label="Close the conversation list"
            onClick={onClose}
          >
            <CloseIcon />
          </button>
        </div>
        <button type="button" class="button-primary wide new-conversation" onClick={onNew}>
          + New conversation
        </button>
        <ul class="conversation-list">
          {conversations.length === 0 ? <li class="muted empty-list">No conversations yet.</li> : null}
          {conversations.map((conversation) => {
            const selected = conversation.id === selectedId;
            return (
              <li key={conversation.id} class={`conversation-item${selected ? ' is-selected' : ''}`}>
                {confirming === conversation.id ? (
                  <fieldset class="confirm-delete">
                    <legend>Delete “{conversation.title || 'Untitled conversation'}”?</legend>
                    <div>
                      <button
                        type="button"
                        class="button-danger small"
                        onClick={() => {
                          setConfirming(undefined);
                          onDelete(conversation.id);
                        }}
                      >
                        Delete
                      </button>
                      <button type="button" class="button-quiet small" onClick={() => setConfirming(undefined)}>
                        Keep
                      </button>
                    </div>
                  </fieldset>
                ) : (
                  <>
                    <button
                      type="button"
                      class="conversation-select"
                      aria-current={selected ? 'page' : undefined}
                      onClick={() => onSelect(conversation.id)}
                    >
                      <span class="conversation-title">{conversation.title || 'Untitled conversation'}</span>
                      <span class="conversation-meta">
                        {conversation.status === 'expired' ? <span class="badge-expired">expired</span> : null}
                        {conversation.busy ? <span class="badge-busy">running</span> : null}
                        {formatTime(conversation.updatedAt)}
                      </span>
                    </button>
                    <button
                      type="button"
                      class="icon-button conversation-delete"
                      aria-label={`Delete conversation ${conversation.title || 'Untitled conversation'}`}
                      title="Delete"
                      onClick={() => setConfirming(conversation.id)}
                    >
                      <TrashIcon />
                    </button>
                  </>
                )}
              </li>
            );
          })}
        </ul>
        <div class="sidebar-footer">
          {config ? (
            <p class="server-facts">
              {config.model ? (
                <>
                  Model: <strong>{config.model.model}</strong> <span class="muted">({config.model.provider})</span>
                </>
              ) : (
                <span>No model configured</span>
              )}
              <br />
              <span class="muted">
                sandcell {config.version}
                {config.idleTimeoutMs > 0
                  ? ` · sessions ${config.onIdle === 'close' ? 'close' : 'pause'} after ${formatDuration(config.idleTimeoutMs)} idle`
                  : ''}
              </span>
            </p>
          ) : null}
          {signedIn ? (
            <button type="button" class="button-quiet small" onClick={onSignOut}>
              Sign out
            </button>
          ) : null}
        </div>
      </nav>
    </>
  );
}
