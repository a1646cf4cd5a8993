/**
 * envd's `Filesystem.WatchDir` stream, by polling: the session's files are
 * reached only through the supervisor (no inotify descriptor crosses into the
 * host), so the watched directory is listed every half second and the
 * difference sent as events — CREATE (and WRITE for a file that arrives with
 * content), WRITE when size or modification time changed, REMOVE — named
 * relative to the watched directory. Changes within one interval merge, and
 * renames read as a REMOVE and a CREATE. A sandbox holds a few watchers at
 * most, streamed and polled (envd-watchers.ts) together. WatchDirResponse's
 * oneof sits at its top level (Process's events are wrapped in `event`).
 */
import type { Context } from 'hono';
import { z } from 'zod';
import { FileOperationError } from '../../errors.js';
import type { FileEntry } from '../../session/files.js';
import type { ServerContext } from '../core/context.js';
import { decodeRequestEnvelope, encodeEndStream, encodeEnvelope } from './connect-envelope.js';
import { listBelowRoot, resolveSandboxPath, type SandboxPath } from './envd-paths.js';
import { ConnectError } from './errors.js';
import type { E2bSandbox } from './sandbox-row.js';

export const POLL_MS = 500;
const KEEPALIVE_MS = 50_000;
const MAX_WATCHERS = 8;

const WatchRequest = z.looseObject({ path: z.string().max(4096), recursive: z.boolean().optional() });

const watchers = new WeakMap<E2bSandbox, number>();

export type Snapshot = Map<string, string>;
export interface WatchEvent {
  name: string;
  type: string;
}

const fingerprint = (entry: FileEntry): string => `${entry.type}:${entry.size}:${entry.modifiedMs}`;

export async function snapshot(sandbox: E2bSandbox, directory: SandboxPath, recursive: boolean): Promise<Snapshot> {
  const entries = await listBelowRoot(sandbox.entry.session.files, directory, { recursive });
  const prefix = directory.relative === '' ? '' : `${directory.relative}/`;
  return new Map(entries.map((entry) => [entry.path.slice(prefix.length), fingerprint(entry)]));
}

export function differences(before: Snapshot, after: Snapshot): WatchEvent[] {
  const events: WatchEvent[] = [];
  for (const [name, print] of after) {
    const previous = before.get(name);
    if (previous === undefined) {
      events.push({ name, type: 'EVENT_TYPE_CREATE' });
      if (print.startsWith('file:') && !print.startsWith('file:0:')) events.push({ name, type: 'EVENT_TYPE_WRITE' });
    } else if (previous !== print && !print.startsWith('directory:')) events.push({ name, type: 'EVENT_TYPE_WRITE' });
  }
  for (const name of before.keys()) if (!after.has(name)) events.push({ name, type: 'EVENT_TYPE_REMOVE' });
  return events;
}

/** Counts a watcher against its sandbox's bound; the function given back lets it go (once). */
export function holdWatcher(sandbox: E2bSandbox): () => void {
  const count = watchers.get(sandbox) ?? 0;
  if (count >= MAX_WATCHERS)
    throw new ConnectError('resource_exhausted', `A sandbox holds at most ${MAX_WATCHERS} watchers.`);
  watchers.set(sandbox, count + 1);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    watchers.set(sandbox, Math.max(0, (watchers.get(sandbox) ?? 1) - 1));
  };
}

/** The watched directory's first listing; a directory that is not there is envd's not_found. */
export async function firstSnapshot(sandbox: E2bSandbox, path: string, recursive: boolean) {
  const directory = resolveSandboxPath(path, { allowRoot: true });
  const last = await snapshot(sandbox, directory, recursive).catch((error: unknown) => {
    if (error instanceof FileOperationError && error.reason === 'not-found') {
      throw new ConnectError('not_found', `No such directory: ${path}`);
    }
    throw error;
  });
  return { directory, last };
}

export async function watchDir(context: Context, sandbox: E2bSandbox, server: ServerContext): Promise<Response> {
  const message = decodeRequestEnvelope(
    new Uint8Array(await context.req.arrayBuffer()),
    server.options.limits.maxRequestBytes,
  );
  const parsed = WatchRequest.safeParse(message);
  if (!parsed.success) throw new ConnectError('invalid_argument', 'WatchDir needs a `path`.');
  const recursive = parsed.data.recursive === true;
  const release = holdWatcher(sandbox);
  let directory: SandboxPath;
  let last: Snapshot;
  try {
    ({ directory, last } = await firstSnapshot(sandbox, parsed.data.path, recursive));
  } catch (error) {
    release();
    throw error;
  }
  const timeout = Number(context.req.header('connect-timeout-ms') ?? 0);
  const timers: NodeJS.Timeout[] = [];
  let finished = false;
  const stop = () => {
    if (finished) return;
    finished = true;
    for (const timer of timers) clearTimeout(timer);
    release();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const finish = (error?: ConnectError) => {
        if (finished) return;
        stop();
        controller.enqueue(encodeEndStream(error));
        controller.close();
      };
      controller.enqueue(encodeEnvelope({ start: {} }));
      const poll = async () => {
        if (finished) return;
        try {
          const next = await snapshot(sandbox, directory, recursive);
          if (finished) return;
          for (const event of differences(last, next)) controller.enqueue(encodeEnvelope({ filesystem: event }));
          last = next;
          timers.push(setTimeout(poll, POLL_MS));
        } catch {
          // The directory went away, or the sandbox did: the watch is over.
          finish(sandbox.entry.session.closed ? new ConnectError('unavailable', 'The sandbox is gone.') : undefined);
        }
      };
      timers.push(setTimeout(poll, POLL_MS));
      timers.push(setInterval(() => controller.enqueue(encodeEnvelope({ keepalive: {} })), KEEPALIVE_MS));
      if (Number.isFinite(timeout) && timeout > 0) {
        timers.push(
          setTimeout(() => finish(new ConnectError('deadline_exceeded', 'The watch reached its timeout.')), timeout),
        );
      }
    },
    cancel: stop,
  });
  return context.body(stream, 200, { 'content-type': 'application/connect+json', 'cache-control': 'no-store' });
}
