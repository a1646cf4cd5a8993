/**
 * Replies, by the request they answer: who may answer it (a context's kernel
 * or the supervisor), what a successful one carries and how its untrusted
 * body is read (kernel-protocol.ts parses the line), and the error a failed
 * one becomes. A body that lacks what it must hold is `{ invalid }`, which
 * the caller turns into a ProtocolError.
 */
import {
  FILE_ERROR_REASONS,
  type FileErrorReason,
  FileOperationError,
  KernelRequestError,
  PortError,
  ProtocolError,
  UnknownContextError,
} from '../errors.js';
import { joinParts } from '../internal/line-splitter.js';
import { type Completion, type Inspection, parseCompletion, parseInspection } from './assist-replies.js';
import type {
  CommandListing,
  CompletenessStatus,
  FileRequest,
  KernelFileEntry,
  KernelRequest,
  ListeningPort,
  LoadedState,
  SavedState,
  SkippedName,
} from './kernel-messages.js';
import { DEFAULT_CONTEXT } from './languages.js';

export type { CommandListing, CompletenessStatus, FileRequest, KernelFileEntry } from './kernel-messages.js';

const COMPLETENESS: ReadonlySet<unknown> = new Set(['complete', 'incomplete', 'invalid', 'unknown']);

/** What the host reads of a successful reply (the supervisor writes more: ReplyMessageBodies in kernel-messages.ts). */
export interface ReplyBodies {
  reset: Record<string, never>;
  ping: Record<string, never>;
  'is-complete': { status: CompletenessStatus; indent: number };
  complete: Completion;
  inspect: Inspection;
  'file-read': { data: string };
  /** A piece of a file; `size` and `modifiedNs` are the file's as the piece was read. */
  'file-chunk': { data: Buffer; size: number; modifiedNs: number; eof: boolean };
  'file-write': Record<string, never>;
  'file-write-chunk': { size: number };
  'file-list': { entries: KernelFileEntry[] };
  'file-remove': Record<string, never>;
  'context-create': { pid: number; version: string | null };
  'context-restart': Record<string, never>;
  'context-remove': Record<string, never>;
  'command-list': { commands: CommandListing[] };
  liveness: { stopped: string[] };
  'port-connect': Record<string, never>;
  'port-list': { ports: ListeningPort[] };
  'state-begin': { directory: string };
  /** The chunk in the pieces it came in (joinParts makes one buffer of them). */
  'state-read': { parts: Buffer[]; bytes: number; eof: boolean };
  'state-write': Record<string, never>;
  'state-end': Record<string, never>;
  'state-pipe': { path: string };
  'state-save': SavedState;
  'state-load': LoadedState;
}

/**
 * The body of a successful reply to `type`, or a description of what is wrong
 * with it (the caller rejects the request with a ProtocolError). `request`:
 * what was asked, for a reply bounded by it (a file-chunk's bytes and offset).
 */
export function parseReplyBody<Type extends KernelRequest['type']>(
  type: Type,
  body: Record<string, unknown>,
  request?: KernelRequest,
): ReplyBodies[Type] | { invalid: string } {
  return REPLY_PARSERS[type](body, request) as ReplyBodies[Type] | { invalid: string };
}

const FILE_ENTRY_TYPES = new Set(['file', 'directory', 'symlink']);

const empty = () => ({});

const REPLY_PARSERS: {
  [Type in KernelRequest['type']]: (body: Record<string, unknown>, request?: KernelRequest) => unknown;
} = {
  reset: empty,
  ping: empty,
  'file-write': empty,
  'file-remove': empty,
  'context-restart': empty,
  'context-remove': empty,
  'is-complete': (body) => ({
    status: COMPLETENESS.has(body.status) ? (body.status as CompletenessStatus) : 'complete',
    // An indent is a few spaces; a kernel's absurd one is none.
    indent: Math.min(Math.max(Math.trunc(Number(body.indent)) || 0, 0), 80),
  }),
  complete: parseCompletion,
  inspect: parseInspection,
  'file-read': (body) =>
    typeof body.data === 'string' ? { data: body.data } : { invalid: 'a file-read reply without its data' },
  'file-chunk': parseFileChunk,
  'file-write-chunk': (body, request) =>
    request?.type === 'file-write-chunk' && body.size === request.offset + request.bytes
      ? { size: body.size }
      : { invalid: 'a file-write-chunk reply whose size is not where the piece ends' },
  'file-list': (body) => {
    if (!Array.isArray(body.entries)) return { invalid: 'a file-list reply without its entries' };
    const entries: KernelFileEntry[] = [];
    for (const entry of body.entries) {
      if (!isObject(entry) || typeof entry.path !== 'string') continue;
      entries.push({
        path: entry.path,
        type: FILE_ENTRY_TYPES.has(entry.type as string) ? (entry.type as KernelFileEntry['type']) : 'other',
        size: Number(entry.size) || 0,
        modifiedMs: Number(entry.modifiedMs) || 0,
      });
    }
    return { entries };
  },
  'context-create': (body) => ({
    pid: Number(body.pid) || 0,
    version: typeof body.version === 'string' ? body.version : null,
  }),
  'state-begin': (body) =>
    typeof body.directory === 'string'
      ? { directory: body.directory }
      : { invalid: 'a state-begin reply without its directory' },
  'state-pipe': (body) =>
    typeof body.path === 'string' ? { path: body.path } : { invalid: 'a state-pipe reply without its path' },
  // The data came as raw bytes after the reply's line (a frame: kernel-connection.ts), never in its JSON.
  'state-read': (body) =>
    framePieces(body.parts) && typeof body.bytes === 'number' && typeof body.eof === 'boolean'
      ? { parts: body.parts, bytes: body.bytes, eof: body.eof }
      : { invalid: 'a state-read reply without its data' },
  // At most one name per context a session may hold, each a context id's length.
  liveness: (body) => ({
    stopped: (stringList(body.stopped) ?? []).filter((name) => name.length <= 64).slice(0, 64),
  }),
  'state-write': empty,
  'state-end': empty,
  'port-connect': empty,
  'port-list': (body) => {
    if (!Array.isArray(body.ports)) return { invalid: 'a port-list reply without its ports' };
    const ports = new Map<number, ListeningPort>();
    for (const entry of body.ports.slice(0, MAX_LISTED_PORTS)) {
      if (!isObject(entry) || !Number.isInteger(entry.port) || typeof entry.address !== 'string') continue;
      const port = entry.port as number;
      if (port < 1 || port > 65_535 || ports.has(port)) continue;
      ports.set(port, { port, address: entry.address.slice(0, 64) });
    }
    return { ports: [...ports.values()].sort((one, other) => one.port - other.port) };
  },
  'state-save': (body) => {
    const names = stringList(body.saved);
    if (!names) return { invalid: 'a state-save reply without the names saved' };
    return { saved: names, skipped: skippedNames(body.skipped), executionCount: count(body.executionCount) };
  },
  'state-load': (body) => {
    const names = stringList(body.restored);
    if (!names) return { invalid: 'a state-load reply without the names restored' };
    return { restored: names, skipped: skippedNames(body.skipped), executionCount: count(body.executionCount) };
  },
  'command-list': (body) => {
    if (!Array.isArray(body.commands)) return { invalid: 'a command-list reply without its commands' };
    const commands: CommandListing[] = [];
    for (const entry of body.commands) {
      if (!isObject(entry) || typeof entry.id !== 'string' || typeof entry.command !== 'string') continue;
      commands.push({
        id: entry.id,
        pid: Number(entry.pid) || 0,
        command: entry.command,
        cwd: typeof entry.cwd === 'string' ? entry.cwd : '',
        startedMs: Number(entry.startedMs) || 0,
      });
    }
    return { commands };
  },
};

/**
 * A file-chunk's reply, checked whole and against its request: its frame
 * (kernel-connection.ts made `data` of exactly `bytes`), no more than was
 * asked, and an `eof` that says what the offset and size say, so a sandbox
 * can neither end a read early nor keep one going with empty pieces.
 */
function parseFileChunk(
  body: Record<string, unknown>,
  request?: KernelRequest,
): ReplyBodies['file-chunk'] | { invalid: string } {
  const { parts, bytes, size, modifiedNs, eof } = body;
  if (!framePieces(parts)) return { invalid: 'a file-chunk reply without its data' };
  const data = joinParts(parts);
  if (data.length !== bytes) return { invalid: 'a file-chunk reply without its data' };
  if (
    !isByteCount(size) ||
    typeof modifiedNs !== 'number' ||
    !Number.isInteger(modifiedNs) ||
    typeof eof !== 'boolean'
  ) {
    return { invalid: 'a file-chunk reply without the file’s size, modification time or end' };
  }
  if (request?.type !== 'file-chunk') return { invalid: 'a file-chunk reply without the request it answers' };
  if (data.length > request.bytes) {
    return { invalid: `a file-chunk reply of ${data.length} bytes, when ${request.bytes} were asked` };
  }
  const end = request.offset + data.length;
  if (data.length > 0 && end > size) return { invalid: `a file-chunk reply past the end of a file of ${size} bytes` };
  if (eof !== end >= size) return { invalid: 'a file-chunk reply whose end disagrees with its size' };
  if (!eof && data.length === 0 && request.bytes > 0) return { invalid: 'an empty file-chunk reply before the end' };
  return { data, size, modifiedNs, eof };
}

function isByteCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Ports one sandbox may say it listens on: more than any app opens, few enough to list. */
const MAX_LISTED_PORTS = 1024;

/** A report's names are the sandbox's words: each bounded, and so many of them. */
const REPORT_NAMES = 10_000;
const REPORT_TEXT = 1024;

function stringList(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value
    .filter((name): name is string => typeof name === 'string')
    .slice(0, REPORT_NAMES)
    .map((name) => name.slice(0, REPORT_TEXT));
}

function skippedNames(value: unknown): SkippedName[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((entry): entry is { name: string; reason: unknown } => isObject(entry) && typeof entry.name === 'string')
    .slice(0, REPORT_NAMES)
    .map((entry) => ({
      name: entry.name.slice(0, REPORT_TEXT),
      reason: typeof entry.reason === 'string' ? entry.reason.slice(0, REPORT_TEXT) : 'unknown',
    }));
}

function count(value: unknown): number {
  const number = Math.trunc(Number(value));
  return Number.isSafeInteger(number) && number > 0 ? number : 0;
}

/** The sandbox's reason code as one this host knows. */
export function fileErrorReason(code: string): FileErrorReason {
  return (FILE_ERROR_REASONS as readonly string[]).includes(code) ? (code as FileErrorReason) : 'internal';
}

export function isFileRequest(request: KernelRequest): request is FileRequest {
  return request.type.startsWith('file-');
}

/** A frame's bytes as the connection hands them over (kernel-connection.ts): the pieces they came in. */
function framePieces(value: unknown): value is Buffer[] {
  return Array.isArray(value) && value.every((part) => Buffer.isBuffer(part));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Which context's kernel answers `request`: none for what the supervisor answers itself (files, contexts, commands). */
export function answeringContext(request: KernelRequest): string | undefined {
  switch (request.type) {
    case 'reset':
    case 'ping':
    case 'is-complete':
    case 'complete':
    case 'inspect':
      return request.context ?? DEFAULT_CONTEXT;
    case 'state-save':
    case 'state-load':
      return request.context;
    default:
      return undefined;
  }
}

/** The error a failed reply to `request` becomes. */
export function requestFailure(request: KernelRequest, error: { code: string; message: string }): Error {
  if (error.code === 'unknown-request') {
    return new ProtocolError(
      `The kernel does not know the request ${request.type} (${error.message}); reinstall sandcell (\`npm run setup\`).`,
    );
  }
  if (isFileRequest(request)) return new FileOperationError(fileErrorReason(error.code), error.message);
  if (request.type === 'port-connect' && error.code === 'ingress-unavailable') {
    return new PortError('ports-unavailable', `This session's ports cannot be reached: ${error.message}.`);
  }
  if (error.code === 'unknown-context' && 'context' in request) {
    return new UnknownContextError(request.context ?? DEFAULT_CONTEXT);
  }
  return new KernelRequestError(request.type, error.code, error.message);
}
