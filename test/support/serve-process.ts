/**
 * A real `sandcell serve` process (the built bin), for tests of what only a
 * process shows: its flags, its start-time checks, SIGTERM and kill -9, and
 * several servers sharing a store. Its JSON log lines are kept; every process
 * started is killed by `killServes()` if a test left it running.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'sandcell.js');
const started: ChildProcess[] = [];

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
export type Json = Record<string, any>;

export interface Serve {
  child: ChildProcess;
  url: string;
  logs: Record<string, unknown>[];
}

/** Starts `sandcell serve --port 0 ARGS` with `env` over this process's (no API keys unless given); resolves once it listens. */
export async function startServe(args: string[], env: Record<string, string> = {}): Promise<Serve> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SANDCELL_API_KEYS: '', ...env },
  });
  started.push(child);
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      logs.push(entry);
      if (typeof entry.url === 'string') resolve(entry.url);
    });
    child.once('exit', (code, signal) => reject(new Error(`serve exited (${code ?? signal}): ${stderr.slice(-2000)}`)));
  });
  return { child, url, logs };
}

/** Runs `sandcell serve ARGS` expecting it to refuse to start: its exit code and what it wrote to stderr. */
export function serveRefusal(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SANDCELL_API_KEYS: '', ...env },
  });
  started.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  child.stdout?.on('data', () => undefined);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

/** Sends `signal` and waits for the process to exit. */
export async function stopServe(serve: Serve, signal: NodeJS.Signals): Promise<void> {
  if (serve.child.exitCode !== null || serve.child.signalCode !== null) return;
  const exited = new Promise((resolve) => serve.child.once('exit', resolve));
  serve.child.kill(signal);
  await exited;
}

/** A request to the server: GET without a body, POST with one; the status and the JSON answered. */
export async function callServe(serve: Serve, route: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${serve.url}${route}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as Json) : {} };
}

/** Kills (SIGKILL) every server process a test left running. */
export function killServes(): void {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
