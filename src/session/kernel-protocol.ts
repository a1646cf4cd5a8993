/**
 * The sandbox protocol (version 2, newline-delimited JSON; docs/kernel-protocol.md,
 * the supervisor's side is src/kernel/) as the host sees it: the one parser that
 * turns an untrusted JSON line into a typed message. The messages themselves
 * (requests, events) are typed in kernel-messages.ts and re-exported here.
 * Everything after the parser reads typed fields; nothing re-checks them.
 *
 * The parser only checks types and picks fields: it never copies or
 * re-serialises the strings it is handed (a result's base64 image or a file
 * read's data), so parsing costs no more than the JSON.parse before it.
 *
 * Who sent a message is told by its `context`: the supervisor adds the
 * context's id as the last key of everything a kernel sends (in JSON.parse the
 * last key wins, so a kernel cannot claim another context's id), and sends its
 * own messages without one. So a supervisor-only message that carries a
 * context was forged by a kernel, and is ignored.
 */
import type {
  CommandEvent,
  ExecutionEvent,
  KernelEvent,
  KernelRequest,
  ReadyEvent,
  ReplyEvent,
  TerminalEvent,
} from './kernel-messages.js';
import type { ReplyBodies } from './kernel-replies.js';

export type {
  CommandEvent,
  CommandSignal,
  ContextExitEvent,
  ContextRequest,
  ExecutionEvent,
  FileRequest,
  KernelEvent,
  KernelFileEntry,
  KernelInstruction,
  KernelRequest,
  ReadyEvent,
  ReplyEvent,
  TerminalEvent,
  TerminalSignal,
} from './kernel-messages.js';
export type { ReplyBodies } from './kernel-replies.js';
export { fileErrorReason, isFileRequest, parseReplyBody } from './kernel-replies.js';

export type ReplyTo<Request extends KernelRequest> = ReplyBodies[Request['type']];

/** An input() prompt, in characters: the host's bound on what a kernel asks with. */
export const INPUT_PROMPT_CHARS = 64 * 1024;

/**
 * One parsed protocol line: a typed event; `log` (diagnostics, kept for
 * messages); `ignored` for what carries nothing the host acts on (messages of
 * unknown type or without an id, an event whose fields are unusable, a
 * supervisor-only message a kernel forged); or `violation` for a line that is
 * not a protocol message at all.
 */
export type ParsedLine =
  | KernelEvent
  | { type: 'log'; message: string }
  | { type: 'ignored' }
  | { type: 'violation'; reason: string };

const IGNORED = { type: 'ignored' } as const;

/**
 * Messages only the supervisor sends, never with a context; a kernel's `log` is
 * diagnostics like any other. (`context-exit` names its context in that very
 * key: one a kernel forges can only name the kernel's own context, and say
 * what the kernel could make true by exiting.)
 */
const SUPERVISOR_ONLY = new Set([
  'ready',
  'command-started',
  'command-output',
  'command-end',
  'terminal-started',
  'terminal-output',
  'terminal-end',
]);

/** Parses one line from the sandbox. Never throws. */
export function parseKernelLine(line: string): ParsedLine {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return { type: 'violation', reason: 'the sandbox sent a line that is not JSON' };
  }
  if (!isPlainObject(message) || typeof message.type !== 'string') {
    return { type: 'violation', reason: 'the sandbox sent a message without a type' };
  }
  const { context } = message;
  if (context !== undefined && (typeof context !== 'string' || SUPERVISOR_ONLY.has(message.type))) return IGNORED;
  if (message.type === 'context-exit') {
    if (typeof context !== 'string') return IGNORED;
    return { type: 'context-exit', context, code: numberOrNull(message.code), signal: stringOrNull(message.signal) };
  }
  if (message.type === 'ready') return parseReady(message);
  if (message.type === 'log') return { type: 'log', message: String(message.message ?? '') };
  const id = typeof message.id === 'string' || typeof message.id === 'number' ? String(message.id) : undefined;
  if (id === undefined) return IGNORED;
  const event = parseIdentified(id, message);
  if (event === undefined) return IGNORED;
  // A context here means a kernel sent it (command events with one were ignored above).
  return context === undefined ? event : ({ ...event, context } as ReplyEvent | ExecutionEvent);
}

function parseReady(message: Record<string, unknown>): ReadyEvent {
  const python = String(message.python);
  const languages: Record<string, string | null> = {};
  if (isPlainObject(message.languages)) {
    for (const [language, version] of Object.entries(message.languages)) {
      languages[language] = typeof version === 'string' ? version : null;
    }
  } else {
    languages.python = python;
  }
  return {
    type: 'ready',
    protocolVersion: Number(message.protocolVersion),
    pid: Number(message.pid),
    python,
    languages,
    statePipes: message.statePipes === true,
  };
}

/** The events that carry an id: replies, an execution's, a command's. */
function parseIdentified(
  id: string,
  message: Record<string, unknown>,
): ReplyEvent | ExecutionEvent | CommandEvent | TerminalEvent | undefined {
  switch (message.type) {
    case 'reply':
      return parseReply(id, message);
    case 'stream':
    case 'command-output': {
      const { name, text } = message;
      if (typeof text !== 'string' || (name !== 'stdout' && name !== 'stderr')) return undefined;
      return { type: message.type, id, name, text };
    }
    case 'result':
    case 'display': {
      if (!isPlainObject(message.data)) return undefined;
      const metadata = isPlainObject(message.metadata) ? message.metadata : {};
      return { type: message.type, id, data: message.data, metadata };
    }
    case 'error':
      return {
        type: 'error',
        id,
        name: typeof message.name === 'string' ? message.name : 'Error',
        value: typeof message.value === 'string' ? message.value : '',
        traceback: Array.isArray(message.traceback)
          ? message.traceback.filter((entry): entry is string => typeof entry === 'string')
          : [],
      };
    case 'execution-end': {
      const { executionCount: count, exitStatus } = message;
      return {
        type: 'execution-end',
        id,
        ...(typeof count === 'number' && Number.isFinite(count) ? { executionCount: count } : {}),
        outputTruncated: message.outputTruncated === true,
        ...(isExitStatus(exitStatus) ? { exitStatus } : {}),
      };
    }
    case 'input-request':
      return {
        type: 'input-request',
        id,
        prompt: typeof message.prompt === 'string' ? message.prompt.slice(0, INPUT_PROMPT_CHARS) : '',
        password: message.password === true,
      };
    case 'command-started': {
      const pid = message.pid;
      if (typeof pid !== 'number' || !Number.isInteger(pid)) return undefined;
      return { type: 'command-started', id, pid };
    }
    case 'command-end':
      return {
        type: 'command-end',
        id,
        exitCode: numberOrNull(message.exitCode),
        signal: stringOrNull(message.signal),
        outputTruncated: message.outputTruncated === true,
        ...(isPlainObject(message.error) ? { error: parseError(message.error) } : {}),
      };
    case 'terminal-started': {
      const pid = message.pid;
      if (typeof pid !== 'number' || !Number.isInteger(pid)) return undefined;
      return { type: 'terminal-started', id, pid };
    }
    case 'terminal-output':
      // Buffer.from skips what is not base64: the bytes are untrusted whatever they decode to.
      if (typeof message.data !== 'string') return undefined;
      return { type: 'terminal-output', id, data: Buffer.from(message.data, 'base64') };
    case 'terminal-end':
      return {
        type: 'terminal-end',
        id,
        exitCode: numberOrNull(message.exitCode),
        signal: stringOrNull(message.signal),
        ...(isPlainObject(message.error) ? { error: parseError(message.error) } : {}),
      };
    default:
      return undefined;
  }
}

function parseReply(id: string, message: Record<string, unknown>): ReplyEvent {
  if (message.ok === true) return { type: 'reply', id, ok: true, body: message };
  return { type: 'reply', id, ok: false, error: parseError(isPlainObject(message.error) ? message.error : {}) };
}

function parseError(error: Record<string, unknown>): { code: string; message: string } {
  return {
    code: typeof error.code === 'string' ? error.code : 'unknown',
    message: typeof error.message === 'string' ? error.message : 'the request failed',
  };
}

/** A process's exit status: what a shell's `$?` can hold. */
function isExitStatus(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 255;
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
