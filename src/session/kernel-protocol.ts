/**
 * The kernel protocol (version 1, newline-delimited JSON; the kernel's side is
 * src/kernel/sandcell_kernel.py) as the host sees it: the requests the host
 * sends, the events and replies the kernel sends, and the one parser that turns
 * an untrusted JSON line into a typed message. Everything after the parser
 * reads typed fields; nothing re-checks what the kernel sent.
 *
 * The parser only checks types and picks fields: it never copies or
 * re-serialises the strings it is handed (a result's base64 image or a file
 * read's data), so parsing costs no more than the JSON.parse before it.
 */
import { FILE_ERROR_REASONS, type FileErrorReason } from '../errors.js';
import type { ExecutionError, MimeBundle } from './execution.js';

/** A request that the kernel answers with a `reply` carrying the same id. */
export type KernelRequest = { type: 'reset' } | { type: 'ping' } | { type: 'is-complete'; code: string } | FileRequest;

export type FileRequest =
  | { type: 'file-read'; path: string }
  | { type: 'file-write'; path: string; data: string }
  | { type: 'file-list'; path: string; recursive: boolean }
  | { type: 'file-remove'; path: string };

/** Requests without a reply: an execution (answered by its events) and its interrupt. */
export type KernelCommand = { type: 'execute'; id: string; code: string } | { type: 'interrupt'; id: string };

/** What a successful reply carries, by the type of the request it answers. */
export interface ReplyBodies {
  reset: Record<string, never>;
  ping: Record<string, never>;
  'is-complete': { status: 'complete' | 'incomplete' | 'invalid'; indent: number };
  'file-read': { data: string };
  'file-write': Record<string, never>;
  'file-list': { entries: KernelFileEntry[] };
  'file-remove': Record<string, never>;
}

export type ReplyTo<Request extends KernelRequest> = ReplyBodies[Request['type']];

export interface KernelFileEntry {
  /** Path relative to /mnt/data. */
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  modifiedMs: number;
}

/** The kernel is up and speaks `protocolVersion`. */
export interface ReadyEvent {
  type: 'ready';
  protocolVersion: number;
  pid: number;
  python: string;
}

/** The answer to a KernelRequest: its body (unchecked until the request type is known) or why it failed. */
export type ReplyEvent = { type: 'reply'; id: string } & (
  | { ok: true; body: Record<string, unknown> }
  | { ok: false; error: { code: string; message: string } }
);

/** What one execution sends, in order, ending with `execution-end`. */
export type ExecutionEvent =
  | { type: 'stream'; id: string; name: 'stdout' | 'stderr'; text: string }
  | { type: 'result' | 'display'; id: string; data: MimeBundle; metadata: Record<string, unknown> }
  | ({ type: 'error'; id: string } & ExecutionError)
  | { type: 'execution-end'; id: string; executionCount?: number; outputTruncated: boolean };

export type KernelEvent = ReadyEvent | ReplyEvent | ExecutionEvent;

/**
 * One parsed protocol line: a typed event; `ignored` for what carries nothing
 * the host acts on (log lines, messages of unknown type or without an id, an
 * execution event whose fields are unusable, as the host always dropped them);
 * or `violation` for a line that is not a protocol message at all.
 */
export type ParsedLine = KernelEvent | { type: 'ignored' } | { type: 'violation'; reason: string };

const IGNORED = { type: 'ignored' } as const;

/** Parses one line from the kernel. Never throws. */
export function parseKernelLine(line: string): ParsedLine {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return { type: 'violation', reason: 'the kernel sent a line that is not JSON' };
  }
  if (!isPlainObject(message) || typeof message.type !== 'string') {
    return { type: 'violation', reason: 'the kernel sent a message without a type' };
  }
  if (message.type === 'ready') {
    return {
      type: 'ready',
      protocolVersion: Number(message.protocolVersion),
      pid: Number(message.pid),
      python: String(message.python),
    };
  }
  const id = typeof message.id === 'string' || typeof message.id === 'number' ? String(message.id) : undefined;
  if (id === undefined) return IGNORED;
  switch (message.type) {
    case 'reply':
      return parseReply(id, message);
    case 'stream': {
      const { name, text } = message;
      if (typeof text !== 'string' || (name !== 'stdout' && name !== 'stderr')) return IGNORED;
      return { type: 'stream', id, name, text };
    }
    case 'result':
    case 'display': {
      if (!isPlainObject(message.data)) return IGNORED;
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
      const count = message.executionCount;
      return {
        type: 'execution-end',
        id,
        ...(typeof count === 'number' && Number.isFinite(count) ? { executionCount: count } : {}),
        outputTruncated: message.outputTruncated === true,
      };
    }
    default:
      return IGNORED;
  }
}

function parseReply(id: string, message: Record<string, unknown>): ReplyEvent {
  if (message.ok === true) return { type: 'reply', id, ok: true, body: message };
  const error = isPlainObject(message.error) ? message.error : {};
  return {
    type: 'reply',
    id,
    ok: false,
    error: {
      code: typeof error.code === 'string' ? error.code : 'unknown',
      message: typeof error.message === 'string' ? error.message : 'the request failed',
    },
  };
}

/**
 * The body of a successful reply to `type`, or a description of what is wrong
 * with it (the caller rejects the request with a ProtocolError).
 */
export function parseReplyBody<Type extends KernelRequest['type']>(
  type: Type,
  body: Record<string, unknown>,
): ReplyBodies[Type] | { invalid: string } {
  return REPLY_PARSERS[type](body) as ReplyBodies[Type] | { invalid: string };
}

const FILE_ENTRY_TYPES = new Set(['file', 'directory', 'symlink']);

const REPLY_PARSERS: { [Type in KernelRequest['type']]: (body: Record<string, unknown>) => unknown } = {
  reset: () => ({}),
  ping: () => ({}),
  'file-write': () => ({}),
  'file-remove': () => ({}),
  'is-complete': (body) => ({
    status: body.status === 'incomplete' || body.status === 'invalid' ? body.status : 'complete',
    indent: Number(body.indent) || 0,
  }),
  'file-read': (body) =>
    typeof body.data === 'string' ? { data: body.data } : { invalid: 'a file-read reply without its data' },
  'file-list': (body) => {
    if (!Array.isArray(body.entries)) return { invalid: 'a file-list reply without its entries' };
    const entries: KernelFileEntry[] = [];
    for (const entry of body.entries) {
      if (!isPlainObject(entry) || typeof entry.path !== 'string') continue;
      entries.push({
        path: entry.path,
        type: FILE_ENTRY_TYPES.has(entry.type as string) ? (entry.type as KernelFileEntry['type']) : 'other',
        size: Number(entry.size) || 0,
        modifiedMs: Number(entry.modifiedMs) || 0,
      });
    }
    return { entries };
  },
};

/** The kernel's reason code as one this host knows. */
export function fileErrorReason(code: string): FileErrorReason {
  return (FILE_ERROR_REASONS as readonly string[]).includes(code) ? (code as FileErrorReason) : 'internal';
}

export function isFileRequest(request: KernelRequest): request is FileRequest {
  return request.type.startsWith('file-');
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
