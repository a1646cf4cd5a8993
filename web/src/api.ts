/**
 * The browser's client of the sandcell API: every call carries the stored API
 * key as a Bearer token, errors become ApiError with the server's code, a 401
 * from any call tells the app to ask for a key, and turns stream over SSE.
 */
import type {
  ApprovalMode,
  Conversation,
  ConversationEvent,
  ConversationMode,
  ConversationSummary,
  ErrorBody,
  FileInfo,
  ServerConfig,
  Turn,
} from '../../src/protocol/index';
import { EventStreamParser } from './event-stream';

export type { ServerConfig };

/** A port something listens on in a session's sandbox (GET /v1/sessions/{id}/ports). */
export interface ListeningPort {
  port: number;
  address: string;
  /** Null for a session whose id cannot be part of a host name. */
  url: string | null;
}

/** One of the key's volumes (GET /v1/volumes). */
export interface VolumeInfo {
  id: string;
  name: string;
  createdAt: string;
}

/** The key's volumes and what they hold together against its quota. */
export interface VolumeList {
  volumes: VolumeInfo[];
  usedBytes: number;
  quotaBytes: number;
}

/** An entry of a volume's directory (GET /v1/volumes/{volume}/files/{path}). */
export interface VolumeEntry {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'unknown';
  size: number;
  mtime: string;
}

/** A volume a new conversation mounts: where its code finds it. */
export interface VolumeChoice {
  volume: string;
  path: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const KEY_NAME = 'sandcell.apiKey';

function storage(kind: 'session' | 'local'): Storage | undefined {
  try {
    return kind === 'session' ? window.sessionStorage : window.localStorage;
  } catch {
    return undefined; // storage disabled: the key lives only in memory
  }
}

let memoryKey: string | null = null;

/** The API key the user gave, if any (this tab first, then "remembered on this device"). */
export function storedKey(): string | null {
  return storage('session')?.getItem(KEY_NAME) ?? storage('local')?.getItem(KEY_NAME) ?? memoryKey;
}

export function storeKey(key: string, remember: boolean): void {
  clearKey();
  memoryKey = key;
  storage(remember ? 'local' : 'session')?.setItem(KEY_NAME, key);
}

export function clearKey(): void {
  memoryKey = null;
  storage('session')?.removeItem(KEY_NAME);
  storage('local')?.removeItem(KEY_NAME);
}

type UnauthorizedListener = (error: ApiError) => void;
let unauthorizedListener: UnauthorizedListener | undefined;

/** Called whenever a request is answered 401 (no key, or a wrong one). */
export function onUnauthorized(listener: UnauthorizedListener): void {
  unauthorizedListener = listener;
}

async function errorFrom(response: Response): Promise<ApiError> {
  let code = `http-${response.status}`;
  let message = `${response.status} ${response.statusText}`.trim();
  try {
    const body = (await response.json()) as Partial<ErrorBody>;
    if (body.error?.code) code = body.error.code;
    if (body.error?.message) message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message);
}

interface RequestOptions extends Omit<RequestInit, 'body'> {
  json?: unknown;
  body?: BodyInit;
  /** Use this key instead of the stored one (to check a key before storing it). */
  key?: string | null;
}

/** fetch() with the key; resolves only for 2xx, else throws ApiError. */
/** A terminal of a session (/v1/sessions/{id}/terminals). */
export interface TerminalInfo {
  id: string;
  pid: number;
  cols: number;
  rows: number;
  socket: string;
}

export async function request(path: string, options: RequestOptions = {}): Promise<Response> {
  const { json, key = storedKey(), headers: given, ...init } = options;
  const headers = new Headers(given);
  if (key) headers.set('authorization', `Bearer ${key}`);
  let body = options.body;
  if (json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(json);
  }
  let response: Response;
  try {
    response = await fetch(path, { ...init, headers, body });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError(0, 'network', 'The sandcell server could not be reached.');
  }
  if (response.ok) return response;
  const error = await errorFrom(response);
  if (response.status === 401 && options.key === undefined) unauthorizedListener?.(error);
  throw error;
}

async function json<T>(path: string, options?: RequestOptions): Promise<T> {
  return (await (await request(path, options)).json()) as T;
}

const conversationPath = (id: string) => `/v1/conversations/${encodeURIComponent(id)}`;
const volumePath = (name: string) => `/v1/volumes/${encodeURIComponent(name)}`;

/** A path inside /mnt/data as URL segments. */
export function encodeDataPath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

export const api = {
  config: () => json<ServerConfig>('/v1/config'),
  /** Checks a key without storing it; throws ApiError 401 when the server refuses it. */
  checkKey: async (key: string) => {
    await request('/v1/conversations', { key });
  },
  listConversations: async () =>
    (await json<{ conversations: ConversationSummary[] }>('/v1/conversations')).conversations,
  createConversation: (fields: { title?: string; mode?: ConversationMode; volumes?: VolumeChoice[] } = {}) =>
    json<Conversation>('/v1/conversations', { method: 'POST', json: fields }),
  listVolumes: () => json<VolumeList>('/v1/volumes'),
  createVolume: (name: string) => json<VolumeInfo>('/v1/volumes', { method: 'POST', json: { name } }),
  deleteVolume: async (name: string) => {
    await request(volumePath(name), { method: 'DELETE' });
  },
  /** A directory's entries; '' is the volume's top. */
  listVolume: async (name: string, path: string) =>
    (await json<{ entries: VolumeEntry[] }>(`${volumePath(name)}/files${path ? `/${encodeDataPath(path)}` : ''}`))
      .entries,
  volumeFileUrl: (name: string, path: string) => `${volumePath(name)}/files/${encodeDataPath(path)}`,
  writeVolumeFile: async (name: string, path: string, file: Blob) => {
    await request(`${volumePath(name)}/files/${encodeDataPath(path)}`, { method: 'PUT', body: file });
  },
  deleteVolumeEntry: async (name: string, path: string) => {
    await request(`${volumePath(name)}/files/${encodeDataPath(path)}`, { method: 'DELETE' });
  },
  setMode: (id: string, mode: ConversationMode) =>
    json<ConversationSummary>(conversationPath(id), { method: 'PATCH', json: { mode } }),
  getConversation: (id: string) => json<Conversation>(conversationPath(id)),
  /** A new conversation on a new session that goes on from one whose session is gone (nothing re-runs). */
  continueConversation: (id: string) => json<Conversation>(`${conversationPath(id)}/continue`, { method: 'POST' }),
  deleteConversation: async (id: string) => {
    await request(conversationPath(id), { method: 'DELETE' });
  },
  cancel: (id: string) => json<{ cancelled: boolean }>(`${conversationPath(id)}/cancel`, { method: 'POST' }),
  decide: (id: string, approvalId: string, decision: 'run' | 'skip' | 'edit', code?: string) =>
    json<{ approvalId: string; decision: string }>(
      `${conversationPath(id)}/approvals/${encodeURIComponent(approvalId)}`,
      { method: 'POST', json: decision === 'edit' ? { decision, code } : { decision } },
    ),
  upload: async (id: string, files: File[]) => {
    const form = new FormData();
    for (const file of files) form.append('file', file, file.name);
    return (await json<{ turn: Turn }>(`${conversationPath(id)}/files`, { method: 'POST', body: form })).turn;
  },
  listFiles: async (sessionId: string) =>
    (await json<{ files: FileInfo[] }>(`/v1/sessions/${encodeURIComponent(sessionId)}/files?recursive=true`)).files,
  deleteFile: async (sessionId: string, path: string) => {
    await request(`/v1/sessions/${encodeURIComponent(sessionId)}/files/${encodeDataPath(path)}`, { method: 'DELETE' });
  },
  fileUrl: (sessionId: string, path: string) =>
    `/v1/sessions/${encodeURIComponent(sessionId)}/files/${encodeDataPath(path)}`,
  notebookUrl: (id: string) => `${conversationPath(id)}/notebook`,
  /** What listens on a port in the session's sandbox, each with the URL the server serves it at. */
  listPorts: async (sessionId: string) =>
    (await json<{ ports: ListeningPort[] }>(`/v1/sessions/${encodeURIComponent(sessionId)}/ports`)).ports,
  /** A link that reaches one port without the key (its token becomes a cookie of that host): for a frame or a tab. */
  listTerminals: async (sessionId: string) =>
    (await json<{ terminals: TerminalInfo[] }>(`/v1/sessions/${encodeURIComponent(sessionId)}/terminals`)).terminals,
  openTerminal: (sessionId: string, size: { cols: number; rows: number }) =>
    json<TerminalInfo>(`/v1/sessions/${encodeURIComponent(sessionId)}/terminals`, { method: 'POST', json: size }),
  closeTerminal: async (sessionId: string, terminalId: string) => {
    await request(`/v1/sessions/${encodeURIComponent(sessionId)}/terminals/${encodeURIComponent(terminalId)}`, {
      method: 'DELETE',
    });
  },
  /**
   * A terminal's socket. A browser cannot set Authorization on a WebSocket: the key goes as a
   * subprotocol (`sandcell.key.` + base64url), beside `sandcell.terminal`, which the server chooses.
   */
  terminalSocket: (terminal: TerminalInfo) => {
    const url = new URL(terminal.socket, window.location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const key = storedKey();
    const protocols = ['sandcell.terminal'];
    if (key) {
      const bytes = new TextEncoder().encode(key);
      const encoded = btoa(String.fromCharCode(...bytes))
        .replace(/\+/g, '-')
        .replace(/\//g, '_')
        .replace(/=+$/, '');
      protocols.push(`sandcell.key.${encoded}`);
    }
    const socket = new WebSocket(url, protocols);
    socket.binaryType = 'arraybuffer';
    return socket;
  },
  previewLink: (sessionId: string, port: number) =>
    json<{ url: string; expiresAt: string }>(`/v1/sessions/${encodeURIComponent(sessionId)}/ports/${port}/preview`, {
      method: 'POST',
      json: {},
    }),
  sendMessage: (id: string, content: string, approval: ApprovalMode, onEvent: (event: ConversationEvent) => void) =>
    streamTurn(`${conversationPath(id)}/messages`, { content, approval }, onEvent),
  /** A python cell sends no `language`, so it runs on servers from before languages too. */
  runCell: (id: string, code: string, language: string, onEvent: (event: ConversationEvent) => void) =>
    streamTurn(`${conversationPath(id)}/cells`, language === 'python' ? { code } : { code, language }, onEvent),
};

/**
 * POSTs and reads the answer as server-sent events until it ends. Resolves
 * with true when the stream carried `turn-end`, false when it broke off first
 * (the turn goes on on the server: follow it with GET). Errors before the
 * turn starts reject with ApiError.
 */
export async function streamTurn(
  path: string,
  body: unknown,
  onEvent: (event: ConversationEvent) => void,
): Promise<boolean> {
  const response = await request(path, { method: 'POST', json: body, headers: { accept: 'text/event-stream' } });
  if (!response.body) return false;
  let ended = false;
  const parser = new EventStreamParser((data) => {
    let event: ConversationEvent;
    try {
      event = JSON.parse(data) as ConversationEvent;
    } catch {
      return; // not an event of ours
    }
    if (event.type === 'turn-end') ended = true;
    onEvent(event);
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(value);
    }
    parser.end();
  } catch {
    // connection lost: the caller follows the turn with GET
  }
  return ended;
}

/** Fetches a file with the key, for a download or a blob: URL. */
export async function fetchBlob(url: string): Promise<{ blob: Blob; filename?: string }> {
  const response = await request(url);
  const disposition = response.headers.get('content-disposition') ?? '';
  return { blob: await response.blob(), filename: filenameFrom(disposition) };
}

function filenameFrom(disposition: string): string | undefined {
  const extended = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(disposition);
  if (extended?.[1]) {
    try {
      return decodeURIComponent(extended[1].trim());
    } catch {
      // fall through to the plain name
    }
  }
  const plain = /filename\s*=\s*"((?:[^"\\]|\\.)*)"|filename\s*=\s*([^;]+)/.exec(disposition);
  const name = plain?.[1]?.replace(/\\(.)/g, '$1') ?? plain?.[2]?.trim();
  return name || undefined;
}

/** Saves a blob as a download named `filename`. */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.rel = 'noopener';
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own reference by now; give slow browsers a moment.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** Downloads an API URL with the key (a plain link could not send it). */
export async function download(url: string, fallbackName: string): Promise<void> {
  const { blob, filename } = await fetchBlob(url);
  saveBlob(blob, filename ?? fallbackName);
}
