/**
 * The events that flow while a question is answered or code runs, named
 * `<noun>-<action>`: one vocabulary for agents, the server and its clients.
 * Agents emit it in process (sandcell/agents, the CLI); a conversation streams
 * it to its clients (SSE or NDJSON) and folds it into its transcript. What an
 * event carries differs in one way only, the `Presentation`: in process a
 * result has its image bytes, an ended execution its files' host paths and the
 * answer its words; on the wire images and files are links and the answer's
 * words are the turn's last text step.
 */
import type {
  CodeFile,
  CodeLanguage,
  ExecutionSummary,
  PresentedResult,
  SessionResumed,
  SkipReason,
  StopReason,
  Turn,
  TurnAnswer,
} from './transcript.js';

/** What the events that differ between a process and the wire carry. */
export interface Presentation {
  /** A result of running code (`result-ready`). */
  result: unknown;
  /** What `execution-end` carries besides its call id. */
  ended: object;
  /** What `answer-end` carries. */
  answer: { stopReason: StopReason };
}

/** The events as a conversation streams them: images and files as links. */
export interface WirePresentation extends Presentation {
  result: PresentedResult;
  ended: {
    execution: ExecutionSummary;
    /** Every result of the execution (replaces what `result-ready` collected). */
    results: PresentedResult[];
    files: CodeFile[];
  };
  answer: TurnAnswer;
}

/**
 * The model's work and its code's. `agent` names the agent that asked the
 * model (in process; absent where the server speaks for itself). `callId` is
 * the model's tool call id, or the turn id for a notebook cell. `language`
 * says what runs the code (a kernel's language, or `shell` for a command);
 * absent means python.
 */
export type WorkEvent<P extends Presentation = WirePresentation> =
  | { type: 'step-start'; agent?: string; step: number; maxSteps: number }
  | { type: 'answer-delta'; agent?: string; text: string }
  | { type: 'code-ready'; callId: string; code: string; language?: CodeLanguage; attempt: number; maxAttempts: number }
  | {
      type: 'execution-start';
      callId: string;
      code: string;
      language?: CodeLanguage;
      attempt: number;
      maxAttempts: number;
      edited: boolean;
    }
  | { type: 'stdout-delta'; callId: string; text: string }
  | { type: 'stderr-delta'; callId: string; text: string }
  | { type: 'result-ready'; callId: string; result: P['result'] }
  | ({ type: 'execution-end'; callId: string } & P['ended'])
  | { type: 'execution-skipped'; callId: string; code: string; language?: CodeLanguage; reason: SkipReason }
  | ({ type: 'answer-end'; agent?: string } & P['answer']);

/** A conversation's stream: a turn's start and end around the work, its approvals and its failure. */
export type ConversationEvent =
  | { type: 'turn-start'; turn: Turn }
  | WorkEvent
  | {
      type: 'approval-request';
      approvalId: string;
      callId: string;
      code: string;
      language?: CodeLanguage;
      attempt: number;
      maxAttempts: number;
    }
  | { type: 'error'; error: { code: string; message: string } }
  /** The session resumed from a pause before this turn, and not everything came back (right after `turn-start`). */
  | { type: 'session-resumed'; resumed: SessionResumed }
  /** The last event of a turn: the turn as the server keeps it. */
  | { type: 'turn-end'; turn: Turn };
