/**
 * The messages of the sandbox protocol (version 2, docs/kernel-protocol.md),
 * as types only: what the host writes to a sandbox, what the supervisor and its
 * kernels write back, and the events the host's parser (kernel-protocol.ts)
 * makes of those. Both sides are written against these types: the host, and
 * the scripted backend that stands in for the sandbox in tests, so the
 * compiler keeps the fake saying what the real supervisor says.
 *
 * A leaf: it imports nothing but types of leaves, so any file of the protocol
 * (the parser, the replies) can import it without a cycle.
 */
import type { Completion, Inspection } from './assist-replies.js';
import type { ExecutionError, MimeBundle } from './execution.js';
import type { Language } from './languages.js';

// --- Host → supervisor -------------------------------------------------------

export type FileRequest =
  | { type: 'file-read'; path: string }
  /** Up to `bytes` (at most FRAME_MAX_BYTES) of a file from `offset`, raw in a frame after the reply's line. */
  | { type: 'file-chunk'; path: string; offset: number; bytes: number }
  | { type: 'file-write'; path: string; data: string }
  /**
   * `bytes` (at most FRAME_MAX_BYTES) raw in a frame after the line, written at `offset`: 0 makes
   * the file anew, a later piece must start where the file ends.
   */
  | { type: 'file-write-chunk'; path: string; offset: number; bytes: number }
  | { type: 'file-list'; path: string; recursive: boolean }
  | { type: 'file-remove'; path: string };

/** Requests about contexts themselves, answered by the supervisor. */
export type ContextRequest =
  | { type: 'context-create'; context: string; language: Language; cwd?: string; env?: Record<string, string> }
  | { type: 'context-restart'; context: string }
  | { type: 'context-remove'; context: string };

/**
 * A snapshot's requests (docs/kernel-protocol.md, "Snapshots"): the archive of the
 * files and the state directory, answered by the supervisor, and each context's
 * kernel writing its state to, or reading it from, a file in that directory.
 * The archive's bytes travel raw in frames, never in JSON: a `state-write`
 * line is followed by its `bytes`, and so is a `state-read`'s reply line.
 */
/** The most raw bytes one frame carries: the supervisor's chunk. */
export const FRAME_MAX_BYTES = 4 << 20;

export type StateRequest =
  | { type: 'state-begin'; mode: 'save' | 'load'; clean?: boolean }
  | { type: 'state-read'; offset: number }
  | { type: 'state-write'; bytes: number; eof?: boolean }
  | { type: 'state-end' }
  | { type: 'state-pipe'; mode: 'save' | 'load'; name: string }
  | { type: 'state-save'; context: string; path: string; stream?: boolean }
  | { type: 'state-load'; context: string; path: string };

/**
 * The ports of the sandbox (docs/kernel-protocol.md, "Ports"), answered by the supervisor:
 * `port-connect` is answered once queued, and the connection itself comes to the session's
 * ingress socket with `token` (src/network/ingress.ts); `port-list` names what listens.
 */
export type PortRequest = { type: 'port-connect'; port: number; token: string } | { type: 'port-list' };

/** A TCP port something listens on inside the sandbox, on an address its loopback reaches. */
export interface ListeningPort {
  port: number;
  address: string;
}

/** A request answered with a `reply` carrying the same id. `context` absent means python. */
export type KernelRequest =
  | { type: 'reset'; context?: string }
  | { type: 'ping'; context?: string }
  | { type: 'is-complete'; code: string; context?: string }
  /** `cursorPos` counts code points, as Jupyter's protocol does. */
  | { type: 'complete'; code: string; cursorPos: number; context?: string }
  | { type: 'inspect'; code: string; cursorPos: number; detailLevel: 0 | 1; context?: string }
  | FileRequest
  | ContextRequest
  | StateRequest
  | { type: 'command-list' }
  | PortRequest
  /** The supervisor's own answer, from its loop whatever the kernels do: the host's liveness check. */
  | { type: 'liveness' };

export type CommandSignal = 'SIGINT' | 'SIGTERM' | 'SIGKILL' | 'SIGHUP' | 'SIGQUIT';

/**
 * Requests without a reply: an execution and a command are answered by their
 * events, the others by nothing (their effect shows in those events).
 */
export type KernelInstruction =
  /**
   * `stdin`: the host answers input-request (the code's input() asks it), else input() reads nothing.
   * `waitForEventLoop`: the JavaScript kernel ends the execution once its event loop is empty (RunOptions).
   */
  | { type: 'execute'; id: string; code: string; context?: string; stdin?: boolean; waitForEventLoop?: boolean }
  /** The answer to an execution's input-request: a line, or `cancelled` (input() raises EOFError). */
  | { type: 'input-reply'; id: string; value?: string; cancelled?: boolean; context?: string }
  | { type: 'interrupt'; id: string; context?: string }
  | { type: 'command-start'; id: string; command: string; cwd?: string; env?: Record<string, string>; stdin?: boolean }
  | { type: 'command-stdin'; id: string; data: string; eof?: boolean }
  | { type: 'command-signal'; id: string; signal: CommandSignal }
  | TerminalInstruction;

export type TerminalSignal = 'SIGINT' | 'SIGQUIT' | 'SIGTSTP' | 'SIGTERM' | 'SIGHUP' | 'SIGKILL';

/** A terminal's requests (sandcell_terminals.py): input and output are base64, a terminal's bytes not always text. */
export type TerminalInstruction =
  | {
      type: 'terminal-open';
      id: string;
      cols: number;
      rows: number;
      argv?: string[];
      cwd?: string;
      env?: Record<string, string>;
    }
  | { type: 'terminal-input'; id: string; data: string }
  | { type: 'terminal-resize'; id: string; cols: number; rows: number }
  /** Bytes of output the host has passed on: the supervisor reads the pty again once fewer than its window are out. */
  | { type: 'terminal-ack'; id: string; bytes: number }
  | { type: 'terminal-signal'; id: string; signal: TerminalSignal }
  | { type: 'terminal-close'; id: string };

/** One line the host writes: a request with the id its reply will carry, an instruction, or the end. */
export type HostMessage = (KernelRequest & { id: string }) | KernelInstruction | { type: 'shutdown' };

/** The host messages a context's kernel answers (the supervisor routes them by `context`). */
export type ContextBoundMessage = Extract<
  HostMessage,
  {
    type:
      | 'execute'
      | 'interrupt'
      | 'input-reply'
      | 'reset'
      | 'ping'
      | 'is-complete'
      | 'complete'
      | 'inspect'
      | 'state-save'
      | 'state-load';
  }
>;

// --- Reply bodies ------------------------------------------------------------

export interface KernelFileEntry {
  /** Path relative to /mnt/data. */
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  modifiedMs: number;
}

/** A running command as the supervisor lists it. */
export interface CommandListing {
  id: string;
  pid: number;
  command: string;
  cwd: string;
  startedMs: number;
}

/** Whether code is a whole statement; `unknown` where the kernel cannot tell. */
export type CompletenessStatus = 'complete' | 'incomplete' | 'invalid' | 'unknown';

/** A kernel that is ready: what `context-create` and `context-restart` answer. */
export interface StartedKernel {
  pid: number;
  language: string;
  version: string | null;
}

/** A name of a context's state a kernel could not save or load, and why (`socket`, `a running process is not kept`). */
export interface SkippedName {
  name: string;
  reason: string;
}

/** A kernel's answer to state-save: the names it wrote, those it left out, its execution count. */
export interface SavedState {
  saved: string[];
  skipped: SkippedName[];
  executionCount: number;
}

/** A kernel's answer to state-load: the names back, those not, and the count its next execution follows. */
export interface LoadedState {
  restored: string[];
  skipped: SkippedName[];
  executionCount: number;
}

/** A reply that carries nothing beside `ok`. */
type NoBody = Record<never, never>;

/**
 * What a successful reply carries beside `type`, `id` and `ok`, as the
 * supervisor (src/kernel/) writes it; the host picks what it reads from it
 * (ReplyBodies, kernel-replies.ts).
 */
export interface ReplyMessageBodies {
  reset: NoBody;
  ping: NoBody;
  'is-complete': { status: CompletenessStatus; indent: number };
  complete: Completion;
  inspect: Inspection;
  'file-read': { data: string };
  /** `bytes` raw bytes follow the line; `size` and `modifiedNs` are the file's as it was read. */
  'file-chunk': { bytes: number; size: number; modifiedNs: number; eof: boolean };
  'file-write': { size: number };
  /** The file's size once the piece is written. */
  'file-write-chunk': { size: number };
  'file-list': { entries: KernelFileEntry[] };
  'file-remove': NoBody;
  'context-create': StartedKernel;
  'context-restart': StartedKernel;
  'context-remove': NoBody;
  'command-list': { commands: CommandListing[] };
  /** The contexts whose kernel is stopped (by SIGSTOP, say): they can answer nothing until resumed. */
  liveness: { stopped: string[] };
  'port-connect': NoBody;
  'port-list': { ports: ListeningPort[] };
  'state-begin': { directory: string };
  'state-read': { bytes: number; eof: boolean };
  'state-write': NoBody;
  'state-end': NoBody;
  'state-pipe': { path: string };
  'state-save': SavedState;
  'state-load': LoadedState;
}

export interface ReplyError {
  code: string;
  message: string;
}

// --- Supervisor → host, as the host reads them ---------------------------------

/** The supervisor is up, its python context ready, and these languages' runtimes are present. */
export interface ReadyEvent {
  type: 'ready';
  protocolVersion: number;
  pid: number;
  python: string;
  /** Language → version (null when unknown). A sandbox of protocol 1 has python alone. */
  languages: Record<string, string | null>;
  /** It streams a Python context's state through a pipe (state-pipe): a fork's dump, transfer and load overlap. */
  statePipes: boolean;
}

/** The answer to a KernelRequest: its body (unchecked until the request type is known) or why it failed. */
export type ReplyEvent = { type: 'reply'; id: string; context?: string } & (
  | { ok: true; body: Record<string, unknown> }
  | { ok: false; error: ReplyError }
);

type Stream = { type: 'stream'; id: string; name: 'stdout' | 'stderr'; text: string };
type Output = { type: 'result' | 'display'; id: string; data: MimeBundle; metadata: Record<string, unknown> };
type Raised = { type: 'error'; id: string } & ExecutionError;
type InputRequest = { type: 'input-request'; id: string; prompt: string; password: boolean };

/**
 * What one execution sends, in order, ending with `execution-end`; `context` is the kernel's.
 * `exitStatus` on the end: the code asked its interpreter to exit (Python's SystemExit, bash's
 * `exit`), with that status (0–255); the kernel runs on.
 */
export type ExecutionEvent = { context?: string } & (
  | Stream
  | Output
  | Raised
  | { type: 'execution-end'; id: string; executionCount?: number; outputTruncated: boolean; exitStatus?: number }
  | InputRequest
);

/** A context's kernel ended without being asked (a crash, an out-of-memory kill, killed by the code). */
export interface ContextExitEvent {
  type: 'context-exit';
  context: string;
  code: number | null;
  signal: string | null;
}

/**
 * What one command sends: its pid once started, its output, and its end. A
 * command that could not start gets no `command-started`, and its end says why
 * (`error`: `invalid-request`, `invalid-cwd`, `spawn-failed`).
 */
export type CommandEvent =
  | { type: 'command-started'; id: string; pid: number }
  | { type: 'command-output'; id: string; name: 'stdout' | 'stderr'; text: string }
  | {
      type: 'command-end';
      id: string;
      exitCode: number | null;
      signal: string | null;
      outputTruncated: boolean;
      error?: ReplyError;
    };

/** What one terminal sends: its pid once started, its output (the bytes, decoded from base64), and its end. */
export type TerminalEvent =
  | { type: 'terminal-started'; id: string; pid: number }
  | { type: 'terminal-output'; id: string; data: Buffer }
  | { type: 'terminal-end'; id: string; exitCode: number | null; signal: string | null; error?: ReplyError };

export type KernelEvent = ReadyEvent | ReplyEvent | ExecutionEvent | ContextExitEvent | CommandEvent | TerminalEvent;

// --- Supervisor → host, as written on the channel --------------------------------
// Where a line differs from the event the host makes of it: a reply's body lies
// flat beside `ok`; an execution's end says its status; a result its count.

/** A reply as it is written: a successful one's body beside `ok`. */
export type ReplyMessage<Type extends KernelRequest['type'] = KernelRequest['type']> = {
  type: 'reply';
  id: string;
  context?: string;
} & (({ ok: true } & ReplyMessageBodies[Type]) | { ok: false; error: ReplyError });

/** What a kernel writes for one execution (`executionCount` null: the execution never ran). */
export type ExecutionMessage = { context?: string } & (
  | Stream
  | (Output & { type: 'display' })
  | (Omit<Output, 'type'> & { type: 'result'; executionCount: number })
  | Raised
  | {
      type: 'execution-end';
      id: string;
      status: 'ok' | 'error';
      executionCount?: number | null;
      outputTruncated: boolean;
      exitStatus?: number;
    }
  | InputRequest
);

/** Diagnostics: the host logs them. */
export interface LogMessage {
  type: 'log';
  message: string;
}

/** The answer to a host line that is not a JSON object. */
export interface ProtocolErrorMessage {
  type: 'protocol-error';
  message: string;
}

/** Every line the supervisor writes (its own, and its kernels' with their `context`). */
export type SupervisorMessage =
  | ReadyEvent
  | ReplyMessage
  | ExecutionMessage
  | ContextExitEvent
  | CommandEvent
  | Exclude<TerminalEvent, { type: 'terminal-output' }>
  | { type: 'terminal-output'; id: string; data: string }
  | LogMessage
  | ProtocolErrorMessage;

/** What a context's kernel writes; its supervisor adds the context's id. */
export type KernelMessage = ExecutionMessage | ReplyMessage<ContextBoundMessage['type'] & KernelRequest['type']>;
