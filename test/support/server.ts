/**
 * Shared by the server suites: a real server on 127.0.0.1 (port 0) with a real
 * pool, on bubblewrap or on the scripted backend.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll } from 'vitest';
import {
  createScriptedBackend,
  type ExecuteScript,
  type ScriptedBackend,
  type ScriptedBackendOptions,
} from '../../src/backends/scripted/index.js';
import { createServer, type SandcellServer, type ServerOptions } from '../../src/server/index.js';

/** Collects the server's log lines (pino JSON) for assertions, printing nothing. */
export class LogCapture extends Writable {
  readonly lines: Record<string, unknown>[] = [];

  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    for (const line of chunk.toString().split('\n')) if (line.trim()) this.lines.push(JSON.parse(line));
    callback();
  }
}

export async function startTestServer(options: ServerOptions = {}): Promise<SandcellServer & { logs: LogCapture }> {
  const logs = new LogCapture();
  const server = await createServer({
    host: '127.0.0.1',
    port: 0,
    poolSize: 1,
    preloadModules: [],
    logDestination: logs,
    ...options,
  });
  return Object.assign(server, { logs });
}

export interface Client {
  (path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  json<T = Record<string, unknown>>(path: string, init?: RequestInit & { json?: unknown }): Promise<T>;
}

/** fetch against the server, with the key (if any) as a Bearer token and `json` sent as a JSON body. */
export function client(server: SandcellServer, key?: string): Client {
  const call = (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    if (key) headers.set('authorization', `Bearer ${key}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return fetch(`${server.url}${path}`, { ...init, headers, body });
  };
  return Object.assign(call, {
    async json<T>(path: string, init?: RequestInit & { json?: unknown }): Promise<T> {
      const response = await call(path, init);
      const text = await response.text();
      if (!response.ok) throw new Error(`${init?.method ?? 'GET'} ${path} → ${response.status}: ${text}`);
      return JSON.parse(text) as T;
    },
  }) as Client;
}

/**
 * The same server on the scripted backend, for tests of the server's own logic:
 * every kernel answers from `execute` (see support/kernel-script.ts), every
 * command does what `backendOptions.command` says.
 */
export async function startScriptedServer(
  execute: ExecuteScript | undefined,
  options: ServerOptions = {},
  backendOptions: Omit<ScriptedBackendOptions, 'execute'> = {},
): Promise<SandcellServer & { logs: LogCapture; backend: ScriptedBackend }> {
  const backend = createScriptedBackend({ ...backendOptions, execute });
  return Object.assign(await startTestServer({ ...options, backend }), { backend });
}

export interface ScriptedServerFixture {
  /** The running server: set once the file's `beforeAll` has run. */
  readonly server: SandcellServer & { logs: LogCapture; backend: ScriptedBackend };
  /** A client with the first of `apiKeys` (none without keys), usable from the file's tests. */
  readonly api: Client;
  /** A client with another key. */
  clientWith(key: string): Client;
  /** Opens a /v1 session with the first key and gives its id. */
  newSession(): Promise<string>;
}

/**
 * One scripted server for a whole test file: started before its tests, closed after them. The
 * clients it gives may be made at the top of the file; they reach the server once it is up.
 */
export function useScriptedServer(
  execute: ExecuteScript | undefined,
  options: ServerOptions = {},
  backendOptions: Omit<ScriptedBackendOptions, 'execute'> = {},
): ScriptedServerFixture {
  let server: (SandcellServer & { logs: LogCapture; backend: ScriptedBackend }) | undefined;
  beforeAll(async () => {
    server = await startScriptedServer(execute, options, backendOptions);
  });
  afterAll(async () => {
    await server?.close();
  });
  const running = () => {
    if (!server) throw new Error('The scripted server is not running: use it inside a test.');
    return server;
  };
  const clientWith = (key: string | undefined): Client =>
    Object.assign((path: string, init?: RequestInit & { json?: unknown }) => client(running(), key)(path, init), {
      json: <T>(path: string, init?: RequestInit & { json?: unknown }) => client(running(), key).json<T>(path, init),
    }) as Client;
  const api = clientWith(options.apiKeys?.[0]);
  return {
    get server() {
      return running();
    },
    api,
    clientWith,
    async newSession() {
      return (await api.json<{ id: string }>('/v1/sessions', { method: 'POST' })).id;
    },
  };
}
