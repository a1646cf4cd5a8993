/**
 * Pure functions over this page's copy of a conversation: a streamed event
 * folded into it, its summary for the list, the mode it was left in, and what
 * the live region says when one of its turns ends.
 */
import {
  applyConversationEvent,
  type Conversation,
  type ConversationEvent,
  type ConversationSummary,
  type Turn,
} from '../../../src/protocol/index';
import type { Mode } from '../components/ConversationView';

export function summaryOf(conversation: Conversation): ConversationSummary {
  const { turns: _turns, ...summary } = conversation;
  return summary;
}

/** Folds one streamed event into the conversation's turn `turnId`. */
export function fold(
  all: Record<string, Conversation>,
  conversationId: string,
  turnId: string,
  event: ConversationEvent,
): Record<string, Conversation> {
  const conversation = all[conversationId];
  if (!conversation) return all;
  let turns: Turn[];
  if (event.type === 'turn-start') {
    turns = [...conversation.turns.filter((turn) => turn.id !== event.turn.id), event.turn];
  } else {
    turns = conversation.turns.map((turn) => (turn.id === turnId ? applyConversationEvent(turn, event) : turn));
  }
  const busy = event.type === 'turn-start' ? true : event.type === 'turn-end' ? false : conversation.busy;
  return { ...all, [conversationId]: { ...conversation, turns, busy, turnCount: turns.length } };
}

/** The mode the conversation was left in; before any client chose one, what its latest turn was. */
export function modeOf(conversation: Conversation, fallback: Mode): Mode {
  if (conversation.mode) return conversation.mode;
  const last = conversation.turns.findLast((turn) => turn.kind !== 'upload');
  return last ? (last.kind === 'cell' ? 'notebook' : 'chat') : fallback;
}

export function describeEnd(turn: Turn): string {
  if (turn.status === 'error') return `Failed: ${turn.error?.message ?? 'an error occurred'}`;
  if (turn.status === 'cancelled') return 'Stopped.';
  if (turn.kind === 'cell') {
    const step = turn.steps[0];
    return step?.type === 'code' && step.status !== 'ok' ? `Cell finished: ${step.status}.` : 'Cell finished.';
  }
  return 'Answer complete.';
}
