/**
 * The apps a conversation's session serves: the ports something listens on in its sandbox, asked
 * when the conversation is opened and whenever a turn ends (`version`), then again a moment later
 * (a server started by a cell often listens only after the cell has ended). A session that has ended
 * serves nothing; a failed look is silent (the next turn asks again).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type ListeningPort } from '../api';

/** Looks after a turn's end: at once, then for a server still starting. */
const LOOKS_MS = [0, 1500, 5000];

export function usePorts(sessionId: string | undefined, expired: boolean, version: number): ListeningPort[] {
  const [ports, setPorts] = useState<ListeningPort[]>([]);
  useEffect(() => {
    setPorts([]);
  }, [sessionId]);
  useEffect(() => {
    if (!sessionId || expired) {
      setPorts([]);
      return;
    }
    let live = true;
    const timers = LOOKS_MS.map((delay) =>
      setTimeout(() => {
        api.listPorts(sessionId).then(
          (found) => {
            if (live) setPorts(found.filter((port) => port.url !== null));
          },
          () => undefined,
        );
      }, delay),
    );
    return () => {
      live = false;
      for (const timer of timers) clearTimeout(timer);
    };
  }, [sessionId, expired, version]);
  return ports;
}
