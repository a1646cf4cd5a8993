/**
 * A conversation's transcript: the turns and steps the server keeps, sends
 * (GET /v1/conversations/{id}) and exports, and the web UI shows.
 */

/**
 * What ran a piece of code: a language of the session's contexts, or `shell`
 * for a one-off shell command (the chat agent's run_shell_command). Absent on
 * a step means python.
 */
export type CodeLanguage = 'python' | 'javascript' | 'typescript' | 'bash' | 'r' | 'shell';

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

/** Why code did not run: the user declined it, the model had no attempts left, or the turn was cancelled. */
export type SkipReason = 'declined' | 'no-attempts-left' | 'cancelled';

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
  /** What ran it; absent for python. */
  language?: CodeLanguage;
  /** The code that ran, when the user edited it before approving. */
  ranCode?: string;
  attempt: number;
  maxAttempts: number;
  status: CodeStatus;
  /** Set while the code waits for a decision. */
  approvalId?: string;
  skipReason?: SkipReason;
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

/** `answer`: the model answered; `max-steps`: it was stopped at its step limit and asked to wrap up; `gave-up`: code failed its attempts in a row. */
export type StopReason = 'answer' | 'max-steps' | 'gave-up';

export interface TurnAnswer {
  stopReason: StopReason;
  steps: number;
  usage: { inputTokens: number; outputTokens: number };
}

/** A name a resumed session could not bring back, and why (`socket`, `generator`). */
export interface NotRestoredName {
  name: string;
  reason: string;
  /** The context it lived in, when not python's default one. */
  context?: string;
}

/**
 * What did not come back when the turn's session resumed from a pause (idle,
 * or a server that stopped); set only when something did not.
 */
export interface SessionResumed {
  /** Variables that could not be restored (at most 50 are listed; `message` counts them all). */
  skipped: NotRestoredName[];
  /** What ran when the session was paused and could not be kept (commands). */
  notKept: { name: string; reason: string }[];
  /** The same for a person: "2 variables could not be restored: conn (socket), gen (generator)." */
  message: string;
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
  /** The session resumed from a pause before this turn, and this did not come back. */
  resumed?: SessionResumed;
}

export type ConversationStatus = 'active' | 'expired';

/** How a client shows a conversation: questions to the model, or notebook cells. */
export type ConversationMode = 'chat' | 'notebook';

export interface ConversationSummary {
  id: string;
  title: string;
  /** The session that runs its code (files: /v1/sessions/{sessionId}/files). */
  sessionId: string;
  /**
   * `expired`: the session is gone (closed, deleted, its state could not be kept, or the server stopped
   * without pausing it); the history is kept and read-only. A session paused (idle, or by a server that
   * stopped) leaves the conversation `active`: its next turn resumes it.
   */
  status: ConversationStatus;
  /** A turn is running. */
  busy: boolean;
  createdAt: string;
  updatedAt: string;
  expiredAt?: string;
  expiredReason?: string;
  turnCount: number;
  /** The view a client last chose for it (PATCH /v1/conversations/{id}), so it reopens the same anywhere; absent until set. */
  mode?: ConversationMode;
  /** The oldest turns dropped whole to keep the history within the server's bounds (outputs go first). */
  droppedTurns?: number;
  /** The conversation this one continues (POST …/continue): the model was given its history; nothing of it was re-run. */
  continuedFrom?: { id: string; title: string };
  /** The key's volumes its session mounts (chosen when it was started; a continuation mounts them too). */
  volumes?: ConversationVolume[];
}

/** A volume a conversation's session mounts. */
export interface ConversationVolume {
  volumeId: string;
  /** Its name. */
  volume: string;
  /** Where the code finds it. */
  path: string;
  readOnly: boolean;
  /** The directory of the volume mounted there, when not all of it. */
  subPath?: string;
}

export interface Conversation extends ConversationSummary {
  turns: Turn[];
}
