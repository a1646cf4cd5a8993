/**
 * An app the session serves, in a frame beside the chat. The frame loads the port's preview link,
 * whose token becomes a cookie of the app's own host: the app is another origin than this page (its
 * own host name), so it can read nothing of it (the key in this page's storage included) and its
 * requests to the API are refused as another site's.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { CloseIcon, RefreshIcon } from './Icons';

export interface PreviewPanelProps {
  sessionId: string;
  port: number;
  onError: (message: string) => void;
  onClose: () => void;
}

export function PreviewPanel({ sessionId, port, onError, onClose }: PreviewPanelProps) {
  const [url, setUrl] = useState<string>();
  const [reload, setReload] = useState(0);
  useEffect(() => {
    let live = true;
    setUrl(undefined);
    api.previewLink(sessionId, port).then(
      (link) => {
        if (live) setUrl(link.url);
      },
      (error: Error) => {
        if (live) onError(`The app on port ${port} could not be opened: ${error.message}`);
      },
    );
    return () => {
      live = false;
    };
  }, [sessionId, port, reload]);
  return (
    <aside class="preview-panel" aria-label={`App on port ${port}`}>
      <header class="panel-header">
        <h2>App on port {port}</h2>
        <div class="panel-actions">
          {url ? (
            <a class="button-quiet small" href={url} target="_blank" rel="noopener noreferrer">
              Open in a tab
            </a>
          ) : null}
          <button
            type="button"
            class="icon-button"
            aria-label="Reload the app"
            title="Reload"
            onClick={() => setReload((value) => value + 1)}
          >
            <RefreshIcon />
          </button>
          <button type="button" class="icon-button" aria-label="Close the preview" title="Close" onClick={onClose}>
            <CloseIcon />
          </button>
        </div>
      </header>
      {url ? (
        <iframe
          key={`${url}/${reload}`}
          class="preview-frame"
          title={`App on port ${port}`}
          src={url}
          sandbox="allow-scripts allow-forms allow-same-origin allow-popups allow-downloads"
          referrerpolicy="no-referrer"
        />
      ) : (
        <p class="muted panel-body">Opening…</p>
      )}
    </aside>
  );
}
