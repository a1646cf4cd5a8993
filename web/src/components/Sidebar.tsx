/** The conversations: new, select, delete; and who/what the server is. */
import { useState } from 'preact/hooks';
import type { ConversationSummary } from '../../../src/protocol/index';
import type { ServerConfig } from '../api';
import { formatDuration, formatTime } from '../format';

export interface SidebarProps {
  conversations: ConversationSummary[];
  selectedId: string | null;
  config: ServerConfig | null;
  signedIn: boolean;
  onNew: () => void;
  onSelect: (id: string) => void;
  onDelete: (id: string) => void;
  onSignOut: () => void;
}

export function Sidebar(props: SidebarProps) {
  const { conversations, selectedId, config, signedIn, onNew, onSelect, onDelete, onSignOut } = props;
  const [confirming, setConfirming] = useState<string>();
  return (
    <nav class="sidebar" aria-label="Conversations">
      <div class="brand">
        <span class="brand-mark" aria-hidden="true">
          ◆
        </span>
        <span class="brand-name">sandcell</span>
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
                    ✕
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
              {config.idleTimeoutMs > 0 ? ` · sessions close after ${formatDuration(config.idleTimeoutMs)} idle` : ''}
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
  );
}
