/** The notices over the page: an error one is an alert, an info one a status; each can be dismissed. */
import type { Notice } from '../state/notices';
import { CloseIcon } from './Icons';

export interface NoticesProps {
  notices: Notice[];
  onDismiss: (id: number) => void;
}

export function Notices({ notices, onDismiss }: NoticesProps) {
  return (
    <div class="notices" aria-live="assertive">
      {notices.map((notice) => (
        <div key={notice.id} class={`notice notice-${notice.kind}`} role={notice.kind === 'error' ? 'alert' : 'status'}>
          <span>{notice.text}</span>
          <button type="button" class="icon-button" aria-label="Dismiss" onClick={() => onDismiss(notice.id)}>
            <CloseIcon />
          </button>
        </div>
      ))}
    </div>
  );
}
