/**
 * How much conversations keep, and what goes first when they are over.
 *
 * A conversation's history lives in the server's memory and is answered as one
 * JSON document (GET, the notebook export), so it is bounded three ways: each
 * code step's output (output-budget.ts), each conversation's whole history
 * (its turns as JSON plus its images), and all of one key's conversations.
 * Over a bound, the oldest outputs go first — each replaced by a note, their
 * images dropped — while the questions, the code and the model's words stay:
 * they are small, they are what the conversation means, and the code can be
 * run again to get its outputs back. Only when outputs are gone and it is
 * still over do the oldest turns go whole (the conversation counts them).
 */
import { formatBytes } from '../../protocol/format-bytes.js';
import type { CodeStep, Turn } from '../../protocol/index.js';

export const DEFAULT_CONVERSATION_OUTPUT_BYTES = 1024 * 1024;
export const DEFAULT_CONVERSATION_HISTORY_BYTES = 32 * 1024 * 1024;
export const DEFAULT_CONVERSATION_BYTES_PER_KEY = 256 * 1024 * 1024;
/** A history is answered as one JSON string; this keeps it far below V8's longest string (~512 Mi chars). */
export const MAX_CONVERSATION_HISTORY_BYTES = 64 * 1024 * 1024;

export interface HistoryLimits {
  /** Output kept per code step (stdout, stderr and results together; the error apart). */
  outputBytes: number;
  /** One conversation's history: its turns as JSON, and its images. */
  historyBytes: number;
  /** All of one key's conversations together. */
  keyBytes: number;
}

export const DEFAULT_HISTORY_LIMITS: HistoryLimits = {
  outputBytes: DEFAULT_CONVERSATION_OUTPUT_BYTES,
  historyBytes: DEFAULT_CONVERSATION_HISTORY_BYTES,
  keyBytes: DEFAULT_CONVERSATION_BYTES_PER_KEY,
};

const DROPPED_ERROR_VALUE_CHARS = 500;

export function outputsDroppedNote(limitBytes: number): string {
  return `[output dropped: this conversation keeps ${formatBytes(limitBytes)} of history, and its oldest outputs go first]\n`;
}

/** Whether a code step is over (its outputs will not change any more). */
export function isSettled(step: CodeStep): boolean {
  return step.status === 'ok' || step.status === 'error' || step.status === 'timeout' || step.status === 'skipped';
}

/** Whether dropping the step's outputs would free anything (they were not dropped already). */
export function hasOutputs(step: CodeStep, note: string): boolean {
  return (
    (step.stdout !== '' && step.stdout !== note) ||
    step.stderr !== '' ||
    step.results.length > 0 ||
    (step.execution?.error?.traceback.length ?? 0) > 0
  );
}

/** The step without its outputs: the note in stdout, the error's name and the head of its value. */
export function withoutOutputs(step: CodeStep, note: string): CodeStep {
  const error = step.execution?.error;
  return {
    ...step,
    stdout: note,
    stderr: '',
    results: [],
    ...(step.execution
      ? {
          execution: {
            ...step.execution,
            ...(error
              ? {
                  error: {
                    name: error.name.slice(0, 200),
                    value: error.value.slice(0, DROPPED_ERROR_VALUE_CHARS),
                    traceback: [],
                  },
                }
              : {}),
          },
        }
      : {}),
  };
}

/** The image URLs a turn's results link to. */
export function turnImageUrls(turn: Turn): string[] {
  return turn.steps.flatMap((step) =>
    step.type === 'code' ? step.results.flatMap((result) => (result.images ?? []).map((image) => image.url)) : [],
  );
}
