/**
 * What the page tells the user besides the conversation: notices on screen
 * (the latest few; an info one goes by itself) and the announcement the live
 * region reads out (a turn started, ended, an upload added).
 */
import { useCallback, useRef, useState } from 'preact/hooks';

export interface Notice {
  id: number;
  kind: 'info' | 'error';
  text: string;
}

/** How many notices are up at once: a new one takes the oldest's place. */
const MOST_NOTICES = 4;
/** How long an info notice stays up; an error one stays until dismissed. */
const INFO_NOTICE_MS = 6000;

export type Notices = ReturnType<typeof useNotices>;

export function useNotices() {
  const [notices, setNotices] = useState<Notice[]>([]);
  const [announcement, setAnnouncement] = useState('');
  const serial = useRef(0);

  const notify = useCallback((text: string, kind: Notice['kind'] = 'error') => {
    const id = ++serial.current;
    setNotices((current) =>
      [...current.filter((notice) => notice.text !== text), { id, kind, text }].slice(-MOST_NOTICES),
    );
    if (kind === 'info') {
      setTimeout(() => setNotices((current) => current.filter((notice) => notice.id !== id)), INFO_NOTICE_MS);
    }
  }, []);
  const dismiss = (id: number) => setNotices((current) => current.filter((notice) => notice.id !== id));
  /** Takes down the notices that begin with `prefix` (an upload's "Uploading …" once it is over). */
  const dismissStartingWith = (prefix: string) =>
    setNotices((current) => current.filter((notice) => !notice.text.startsWith(prefix)));

  return { notices, notify, dismiss, dismissStartingWith, announcement, announce: setAnnouncement };
}
