/**
 * A turn that runs without this page's stream (after a reload, or a dropped
 * connection) is followed by polling, until it ends.
 */
import { useEffect } from 'preact/hooks';
import { describeEnd } from './conversation-updates';
import type { Conversations } from './conversations';

/** How often the conversation is fetched again while it is followed. */
const POLL_MS = 1000;

export function useFollowTurn(conversations: Conversations, announce: (text: string) => void): void {
  const { selectedId, selected, isStreaming, refreshConversation, filesChanged } = conversations;
  const following = selected?.busy === true && !isStreaming;
  useEffect(() => {
    if (!following || !selectedId) return;
    const id = selectedId;
    const timer = setInterval(async () => {
      const conversation = await refreshConversation(id);
      if (conversation && !conversation.busy) {
        filesChanged();
        const last = conversation.turns[conversation.turns.length - 1];
        if (last) announce(describeEnd(last));
      }
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [following, selectedId, refreshConversation, filesChanged, announce]);
}
