/**
 * What the model is told when a conversation whose session is gone continues
 * in a new one: the earlier history as text, and that none of its state
 * exists any more. Nothing is re-run behind the user's back; the model runs
 * again what it needs, as code steps the user sees (and approves, with --approve).
 * A conversation whose session was paused by a server that stopped keeps its
 * state, but not the model's memory of it: it is told the same history, and
 * that the state is there (resumedContext).
 */
import type { Turn } from '../../protocol/index.js';

/** The history told to the model at most; the newest turns are kept when it is longer. */
export const MAX_CONTINUATION_CHARS = 24_000;
const MAX_OUTPUT_CHARS = 800;
const MAX_CODE_CHARS = 4_000;

const PREAMBLE =
  'This conversation continues an earlier one whose session has ended. Nothing from it was re-run: ' +
  'its variables, imports and files (uploads included) do not exist in this session. Run again what you need, ' +
  'and ask the user to upload files again if the code needs them. The earlier conversation, for reference:';

const RESUMED_PREAMBLE =
  'This conversation went on across a restart of the server: its session was paused and has resumed, so its ' +
  'variables, imports and files (uploads included) are still there, unless a note below says otherwise. ' +
  'What was said and run before the restart, for reference:';

export function continuationContext(turns: readonly Turn[]): string {
  return `${PREAMBLE}\n\n${describeTurns(turns)}`;
}

/** The earlier history of a conversation whose session resumed after a restart (its state is there). */
export function resumedContext(turns: readonly Turn[]): string {
  return `${RESUMED_PREAMBLE}\n\n${describeTurns(turns)}`;
}

function describeTurns(turns: readonly Turn[]): string {
  const described: string[] = [];
  let length = 0;
  for (const turn of [...turns].reverse()) {
    const text = describeTurn(turn);
    if (length + text.length > MAX_CONTINUATION_CHARS) {
      described.push('[earlier turns left out]');
      break;
    }
    described.push(text);
    length += text.length;
  }
  return described.reverse().join('\n\n');
}

function describeTurn(turn: Turn): string {
  const lines: string[] = [];
  if (turn.resumed) lines.push(`(The session resumed from a pause here. ${turn.resumed.message})`);
  if (turn.kind === 'message') lines.push(`User asked: ${turn.input}`);
  if (turn.kind === 'upload') {
    lines.push(`User uploaded: ${(turn.files ?? []).map((file) => `/mnt/data/${file.path}`).join(', ')}`);
  }
  for (const step of turn.steps) {
    if (step.type === 'text') {
      if (step.text.trim() !== '') lines.push(`Assistant: ${step.text.trim()}`);
      continue;
    }
    const who = turn.kind === 'cell' ? 'User ran' : 'Assistant ran';
    lines.push(`${who} (${step.language ?? 'python'}):\n${cut(step.ranCode ?? step.code, MAX_CODE_CHARS)}`);
    const output = [
      step.stdout,
      step.stderr,
      step.execution?.error ? `${step.execution.error.name}: ${step.execution.error.value}` : '',
    ]
      .filter((part) => part.trim() !== '')
      .join('\n');
    if (output !== '') lines.push(`Output:\n${cut(output, MAX_OUTPUT_CHARS)}`);
  }
  return lines.join('\n');
}

function cut(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}… [cut]` : text;
}
