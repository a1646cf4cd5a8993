/**
 * A conversation's transcript: the shapes the server keeps and sends, the
 * events it streams while a turn runs, and the one function that folds an
 * event into a turn. The server folds the events it emits into the history it
 * keeps; the web UI folds the same events into what it shows, so a reopened
 * conversation looks exactly like the live one did. No imports: the web UI
 * bundles this file as it is.
 */

/** `ask`: each piece of code waits for run / skip / edit (POST …/approvals/{approvalId}); `auto`: code runs at once. */
export type ApprovalMode = 'auto' | 'ask';

export interface ImageLink {
  mimeType: string;
  /** GET it with the same credentials as the API (relative to the server). */
  url: string;
}

/** One output of an execution, as Jupyter's MIME bundle; images are stored on the server and linked. */
export interface PresentedResult {
  type: 'execute_result' | 'display_data';
  /** MIME bundle without the images: `text/plain`, `text/html` (untrusted), `application/json`, … */
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  images?: ImageLink[];
}

export interface TracebackError {
  name: string;
  value: string;
  /** Lines may carry ANSI colour codes. */
  traceback: string[];
}

/** A file the code wrote in /mnt/data (new or changed), or a figure saved there. */
export interface CodeFile {
  /** Relative to /mnt/data. */
  path: string;
  size: number;
  kind: 'file' | 'figure';
  /** Download URL, valid while the session lives. */
  url: string;
}

/** What the server could tell about an uploaded file, without running code. */
export interface FilePreview {
  /** Relative to /mnt/data. */
  path: string;
  size: number;
  format: 'csv' | 'tsv' | 'json' | 'jsonl' | 'text' | 'binary';
  rows?: number;
  columns?: { name: string; dtype: string }[];
  /** The first rows, for tables (cells as text). */
  head?: { columns: string[]; rows: string[][] };
  /** The preview text the model was given. */
  text: string;
  url: string;
}

export type CodeStatus = 'awaiting-approval' | 'ready' | 'running' | 'ok' | 'error' | 'timeout' | 'skipped';

export interface ExecutionSummary {
  status: 'ok' | 'error' | 'timeout';
  error?: TracebackError;
  executionCount: number;
  durationMs: number;
  stateLost?: boolean;
  stateLostReason?: string;
  outputTruncated?: boolean;
}

export interface CodeStep {
  type: 'code';
  /** The model's tool call id, or the turn id for a notebook cell. */
  callId: string;
  /** The code as written (by the model, or in the cell). */
  code: string;
  /** The code that ran, when the user edited it before approving. */
  ranCode?: string;
  attempt: number;
  maxAttempts: number;
  status: CodeStatus;
  /** Set while the code waits for a decision. */
  approvalId?: string;
  skipReason?: 'declined' | 'no-attempts-left' | 'cancelled';
  stdout: string;
  stderr: string;
  results: PresentedResult[];
  execution?: ExecutionSummary;
  files: CodeFile[];
}

export interface TextStep {
  type: 'text';
  /** Markdown from the model (untrusted: render it sanitised). */
  text: string;
}

export type Step = TextStep | CodeStep;

export type TurnStatus = 'running' | 'done' | 'error' | 'cancelled';

export interface TurnAnswer {
  stopReason: 'answer' | 'max-steps' | 'gave-up';
  steps: number;
  usage: { inputTokens: number; outputTokens: number };
}

export interface Turn {
  id: string;
  /** `message`: a question to the model; `cell`: code the user ran (notebook); `upload`: files added. */
  kind: 'message' | 'cell' | 'upload';
  createdAt: string;
  status: TurnStatus;
  /** The question, or the cell's code; '' for an upload. */
  input: string;
  /** For uploads: what each file holds. */
  files?: FilePreview[];
  /** What happened, in order: the model's words and the code it ran (one code step for a cell). */
  steps: Step[];
  /** Set when the model answered. The answer's words are the last text step. */
  answer?: TurnAnswer;
  /** Why the turn failed (model unreachable, server shutting down, …). */
  error?: { code: string; message: string };
}

export type ConversationStatus = 'active' | 'expired';

export interface ConversationSummary {
  id: string;
  title: string;
  /** The session that runs its code (files: /v1/sessions/{sessionId}/files). */
  sessionId: string;
  /** `expired`: the session was closed (idle timeout, deleted, server restart of the session); history is kept, state is gone. */
  status: ConversationStatus;
  /** A turn is running. */
  busy: boolean;
  createdAt: string;
  updatedAt: string;
  expiredAt?: string;
  expiredReason?: string;
  turnCount: number;
  /** The oldest turns dropped whole to keep the history within the server's bounds (outputs go first). */
  droppedTurns?: number;
}

export interface Conversation extends ConversationSummary {
  turns: Turn[];
}

export type ConversationEvent =
  | { type: 'turn-start'; turn: Turn }
  | { type: 'step-start'; step: number; maxSteps: number }
  | { type: 'answer-delta'; text: string }
  | { type: 'code-ready'; callId: string; code: string; attempt: number; maxAttempts: number }
  | { type: 'approval-request'; approvalId: string; callId: string; code: string; attempt: number; maxAttempts: number }
  | { type: 'execution-start'; callId: string; code: string; edited: boolean }
  | { type: 'stdout-delta'; callId: string; text: string }
  | { type: 'stderr-delta'; callId: string; text: string }
  | { type: 'result-ready'; callId: string; result: PresentedResult }
  | {
      type: 'execution-end';
      callId: string;
      execution: ExecutionSummary;
      /** Every result of the execution (replaces what `result-ready` collected). */
      results: PresentedResult[];
      files: CodeFile[];
    }
  | { type: 'execution-skipped'; callId: string; code: string; reason: 'declined' | 'no-attempts-left' | 'cancelled' }
  | ({ type: 'answer-end' } & TurnAnswer)
  | { type: 'error'; error: { code: string; message: string } }
  /** The last event of a turn: the turn as the server keeps it. */
  | { type: 'turn-end'; turn: Turn };

function newCodeStep(callId: string, code: string, attempt: number, maxAttempts: number, status: CodeStatus): CodeStep {
  return { type: 'code', callId, code, attempt, maxAttempts, status, stdout: '', stderr: '', results: [], files: [] };
}

function withCodeStep(turn: Turn, callId: string, change: (step: CodeStep) => CodeStep, create?: () => CodeStep): Turn {
  // A retried call id starts a new step; the latest step with the id is the one to change.
  for (let index = turn.steps.length - 1; index >= 0; index--) {
    const step = turn.steps[index];
    if (step?.type === 'code' && step.callId === callId) {
      const steps = turn.steps.slice();
      steps[index] = change(step);
      return { ...turn, steps };
    }
  }
  return create ? { ...turn, steps: [...turn.steps, change(create())] } : turn;
}

/** Folds one event into a turn, returning a new turn (the given one is not changed). */
export function applyConversationEvent(turn: Turn, event: ConversationEvent): Turn {
  switch (event.type) {
    case 'turn-start':
    case 'turn-end':
      return event.turn;
    case 'step-start':
      return turn;
    case 'answer-delta': {
      const last = turn.steps[turn.steps.length - 1];
      if (last?.type === 'text') {
        return { ...turn, steps: [...turn.steps.slice(0, -1), { type: 'text', text: last.text + event.text }] };
      }
      return { ...turn, steps: [...turn.steps, { type: 'text', text: event.text }] };
    }
    case 'code-ready':
      return {
        ...turn,
        steps: [...turn.steps, newCodeStep(event.callId, event.code, event.attempt, event.maxAttempts, 'ready')],
      };
    case 'approval-request':
      return withCodeStep(
        turn,
        event.callId,
        (step) => ({ ...step, status: 'awaiting-approval', approvalId: event.approvalId }),
        () => newCodeStep(event.callId, event.code, event.attempt, event.maxAttempts, 'awaiting-approval'),
      );
    case 'execution-start':
      return withCodeStep(
        turn,
        event.callId,
        (step) => {
          const { approvalId: _approvalId, ...rest } = step;
          return { ...rest, status: 'running', ...(event.edited ? { ranCode: event.code } : {}) };
        },
        () => newCodeStep(event.callId, event.code, 1, 1, 'running'),
      );
    case 'stdout-delta':
      return withCodeStep(turn, event.callId, (step) => ({ ...step, stdout: step.stdout + event.text }));
    case 'stderr-delta':
      return withCodeStep(turn, event.callId, (step) => ({ ...step, stderr: step.stderr + event.text }));
    case 'result-ready':
      return withCodeStep(turn, event.callId, (step) => ({ ...step, results: [...step.results, event.result] }));
    case 'execution-end':
      return withCodeStep(turn, event.callId, (step) => ({
        ...step,
        status: event.execution.status,
        execution: event.execution,
        results: event.results,
        files: event.files,
      }));
    case 'execution-skipped':
      return withCodeStep(
        turn,
        event.callId,
        (step) => {
          const { approvalId: _approvalId, ...rest } = step;
          return { ...rest, status: 'skipped', skipReason: event.reason };
        },
        () => newCodeStep(event.callId, event.code, 1, 1, 'skipped'),
      );
    case 'answer-end': {
      const { type: _type, ...answer } = event;
      return { ...turn, answer };
    }
    case 'error':
      return { ...turn, status: 'error', error: event.error };
  }
}
