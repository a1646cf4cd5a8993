/**
 * One build of a name at a time: `<store>/.build-<name>.lock` holds the
 * building process's identity (pid, start time, boot). A second build of the
 * same name waits for the first, then finds its result (an unchanged
 * description is reused) instead of copying the runtime into the same
 * directories at once. A lock whose owner is gone (killed mid-build, the
 * machine rebooted) is stale and taken over.
 */
import { link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ownProcessIdentity, type ProcessIdentity, processIsGone } from '../internal/process-alive.js';

/** How often a waiting build looks at the lock again. */
const POLL_MS = 500;

export interface BuildLock {
  release(): Promise<void>;
}

export interface AcquireBuildLockOptions {
  store: string;
  name: string;
  /** Told once, when the build has to wait, with the owner's pid. */
  onWait?: (ownerPid: number) => void;
  signal?: AbortSignal;
}

export function buildLockFile(store: string, name: string): string {
  return path.join(store, `.build-${name}.lock`);
}

/** Waits until no live process builds `name`, then holds the lock until `release()`. */
export async function acquireBuildLock(options: AcquireBuildLockOptions): Promise<BuildLock> {
  const file = buildLockFile(options.store, options.name);
  await mkdir(options.store, { recursive: true, mode: 0o755 });
  const identity = ownProcessIdentity();
  const content = `${JSON.stringify(identity)}\n`;
  let told = false;
  for (;;) {
    options.signal?.throwIfAborted();
    const created = await writeFile(file, content, { flag: 'wx', mode: 0o644 }).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'EEXIST') return false;
        throw error;
      },
    );
    if (created) return { release: () => releaseIfOwn(file, content) };
    const owner = await readOwner(file);
    if (owner === undefined || processIsGone(owner)) {
      await removeStale(file, owner);
      continue;
    }
    if (!told) {
      told = true;
      options.onWait?.(owner.pid);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** The pid of the live process building `name` now, if one is. */
export async function buildingProcess(store: string, name: string): Promise<number | undefined> {
  const owner = await readOwner(buildLockFile(store, name));
  return owner && !processIsGone(owner) ? owner.pid : undefined;
}

async function readOwner(file: string): Promise<ProcessIdentity | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const parsed = JSON.parse(text) as Partial<ProcessIdentity>;
    if (typeof parsed.pid !== 'number' || typeof parsed.start !== 'string' || typeof parsed.boot !== 'string') {
      return undefined;
    }
    return parsed as ProcessIdentity;
  } catch {
    // Half-written by an owner that died between create and write: nobody holds it.
    return undefined;
  }
}

/**
 * Takes a stale lock away by renaming it to a name of our own first, so two
 * waiters that both find it stale do not each remove the other's new lock.
 */
async function removeStale(file: string, seen: ProcessIdentity | undefined): Promise<void> {
  const aside = `${file}.stale-${process.pid}`;
  const moved = await rename(file, aside).then(
    () => true,
    () => false,
  );
  if (!moved) return;
  const owner = await readOwner(aside);
  const same = JSON.stringify(owner) === JSON.stringify(seen);
  if (same || owner === undefined || processIsGone(owner)) {
    await rm(aside, { force: true });
    return;
  }
  // Another waiter took the lock meanwhile and this moved its file: put it back.
  // link, not rename: it refuses to replace a lock a third process made since.
  await link(aside, file).catch(() => undefined);
  await rm(aside, { force: true });
}

async function releaseIfOwn(file: string, content: string): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === content) await rm(file, { force: true });
}
