/**
 * envd's polled watches, `Filesystem.CreateWatcher`, `GetWatcherEvents` and
 * `RemoveWatcher`, which E2B's Python sync SDK uses for `files.watch_dir()`
 * (the JS SDK and the async Python SDK stream `WatchDir`, envd-watch.ts).
 * A watcher lists its directory every half second, as a stream does, and
 * queues the differences until the client asks for them. Its queue is
 * bounded: when it is full the watcher stops listing, so what changes
 * meanwhile arrives, merged, once the client has read (a file created and
 * removed in that time is never seen; none is reported twice). A watcher
 * nobody asks for within IDLE_MS is removed, and one whose directory or
 * sandbox went away answers what it had queued, then why it ended. Its id is
 * random, and honoured only on the sandbox that made it.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { UnaryMethod } from './envd-filesystem.js';
import type { SandboxPath } from './envd-paths.js';
import {
  differences,
  firstSnapshot,
  holdWatcher,
  POLL_MS,
  type Snapshot,
  snapshot,
  type WatchEvent,
} from './envd-watch.js';
import { ConnectError, parseConnectMessage as parse } from './errors.js';
import type { E2bSandbox } from './sandbox-row.js';

/** Events a watcher queues before it stops listing until they are read. */
const MAX_QUEUED = 4096;
/** A watcher not asked for its events this long is let go. */
const IDLE_MS = 10 * 60_000;

const CreateRequest = z.looseObject({ path: z.string().max(4096), recursive: z.boolean().optional() });
const WatcherRequest = z
  .looseObject({ watcherId: z.string().max(64).optional(), watcher_id: z.string().max(64).optional() })
  .transform((request) => request.watcherId ?? request.watcher_id ?? '');

interface Watcher {
  readonly sandbox: E2bSandbox;
  readonly directory: SandboxPath;
  readonly recursive: boolean;
  last: Snapshot;
  queued: WatchEvent[];
  askedAt: number;
  timer?: NodeJS.Timeout;
  /** Set once it no longer lists: what it answers after its queue. */
  ended?: ConnectError;
  release: () => void;
}

const watchers = new Map<string, Watcher>();

/** Stops its listing; an ended watcher not asked for within IDLE_MS is forgotten. */
function end(id: string, watcher: Watcher, why: ConnectError): void {
  if (watcher.ended) return;
  watcher.ended = why;
  clearTimeout(watcher.timer);
  watcher.release();
  watcher.timer = setTimeout(() => watchers.delete(id), IDLE_MS);
  watcher.timer.unref();
}

function remove(id: string, watcher: Watcher, why: ConnectError): void {
  end(id, watcher, why);
  clearTimeout(watcher.timer);
  watchers.delete(id);
}

function schedule(id: string, watcher: Watcher): void {
  watcher.timer = setTimeout(() => void poll(id, watcher), POLL_MS);
  watcher.timer.unref();
}

async function poll(id: string, watcher: Watcher): Promise<void> {
  if (watcher.ended) return;
  if (Date.now() - watcher.askedAt > IDLE_MS) {
    remove(
      id,
      watcher,
      new ConnectError(
        'not_found',
        `Watcher ${id} was removed: nobody asked for its events in ${IDLE_MS / 60_000} minutes.`,
      ),
    );
    return;
  }
  if (watcher.queued.length < MAX_QUEUED) {
    try {
      const next = await snapshot(watcher.sandbox, watcher.directory, watcher.recursive);
      if (watcher.ended) return;
      watcher.queued.push(...differences(watcher.last, next));
      watcher.last = next;
    } catch {
      end(
        id,
        watcher,
        watcher.sandbox.entry.session.closed
          ? new ConnectError('unavailable', `Watcher ${id} ended: its sandbox's session closed (a pause or a kill).`)
          : new ConnectError('not_found', `Watcher ${id} ended: its directory is gone.`),
      );
      return;
    }
  }
  schedule(id, watcher);
}

/** The sandbox's own watcher under the id a request names. */
function find(sandbox: E2bSandbox, message: unknown): [string, Watcher] {
  const id = parse(WatcherRequest, message);
  const watcher = watchers.get(id);
  if (!watcher || watcher.sandbox !== sandbox) {
    throw new ConnectError('not_found', `This sandbox has no watcher ${JSON.stringify(id.slice(0, 64))}.`);
  }
  return [id, watcher];
}

export const watcherMethods: Record<string, UnaryMethod> = {
  async CreateWatcher(sandbox, _server, message) {
    const request = parse(CreateRequest, message);
    const recursive = request.recursive === true;
    const release = holdWatcher(sandbox);
    try {
      const { directory, last } = await firstSnapshot(sandbox, request.path, recursive);
      const id = randomBytes(16).toString('hex');
      const watcher: Watcher = { sandbox, directory, recursive, last, queued: [], askedAt: Date.now(), release };
      watchers.set(id, watcher);
      schedule(id, watcher);
      return { watcherId: id };
    } catch (error) {
      release();
      throw error;
    }
  },

  async GetWatcherEvents(sandbox, _server, message) {
    const [id, watcher] = find(sandbox, message);
    watcher.askedAt = Date.now();
    if (watcher.queued.length === 0 && watcher.ended) {
      const why = watcher.ended;
      remove(id, watcher, why);
      throw why;
    }
    const events = watcher.queued;
    watcher.queued = [];
    return { events };
  },

  async RemoveWatcher(sandbox, _server, message) {
    const [id, watcher] = find(sandbox, message);
    remove(id, watcher, new ConnectError('not_found', `Watcher ${id} was removed.`));
    return {};
  },
};
