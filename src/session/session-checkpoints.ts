/**
 * Snapshots that keep the whole sandbox, where its backend can checkpoint one (gVisor): the files, as
 * every snapshot keeps them (the archive part, written through the kernel), then the runtime's image
 * of every process, its memory and its open files (the `checkpoint-*` parts). A resume writes the
 * files into the new session's sandbox first (the image's open files must be there), then restores
 * the image in its place: generators, threads, sockets between its processes and background
 * processes come back, which no kernel's own save and load can bring.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { SnapshotFailedError, SnapshotIncompatibleError, SnapshotInvalidError } from '../snapshots/snapshot-errors.js';
import type { SnapshotManifest, SnapshotStore, SnapshotWriter } from '../snapshots/snapshot-store.js';
import type { KernelConnection } from './kernel-connection.js';
import type { SessionContexts } from './session-contexts.js';
import type { SessionSandbox } from './session-sandbox.js';
import {
  ARCHIVE_PART,
  type CheckpointDetails,
  endState,
  type RestoredContext,
  readArchive,
  type SavedContext,
  saveContexts,
  writeArchive,
} from './session-state.js';

const PART_PREFIX = 'checkpoint-';
/** An image file's name as a part's (the store's part names, less the prefix). */
const IMAGE_FILE = /^[a-z0-9][a-z0-9._-]{0,40}$/;

/** Where the bytes of one snapshot may go, and what overflowing them throws. */
export interface PartBound {
  bytes: number;
  overflow?: (maxBytes: number) => Error;
}

/**
 * Writes the sandbox's files and then its checkpoint into `writer`; the sandbox ends with it (the
 * caller restores it to go on, or closes the session). `contexts` are the live ones, kept as they are.
 */
export async function writeCheckpoint(options: {
  sandbox: SessionSandbox;
  connection: KernelConnection;
  writer: SnapshotWriter;
  backend: string;
  contexts: SavedContext[];
  bound: PartBound;
  /** The most the image may take (the sandbox's memory and /tmp, which the image holds). */
  imageBytes: number;
  timeoutMs: number;
  /** The session goes on (a snapshot, not a pause): its sandbox is restored from the image at once. */
  goOn: boolean;
  /** Where the contexts are taken up again when the sandbox is restored. */
  adoptInto: SessionContexts;
}): Promise<CheckpointDetails> {
  const { sandbox, connection, writer, bound, timeoutMs } = options;
  const ready = connection.announced;
  if (!ready) throw new Error('unreachable: a checkpoint of a sandbox that never started');
  // The archive of files alone: the kernels' state stays in their memory, which the image keeps.
  await saveContexts(connection, [], timeoutMs);
  let written = 0;
  try {
    const part = await writer.part(ARCHIVE_PART, readArchive(connection, bound.bytes, timeoutMs, bound.overflow));
    written = part.bytes;
  } finally {
    await endState(connection, timeoutMs).catch(() => undefined);
  }
  const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-checkpoint-'));
  try {
    const about = await sandbox.checkpoint(connection, directory);
    if (!about) throw new Error('unreachable: writeCheckpoint on a sandbox that keeps no checkpoints');
    const files: string[] = [];
    let failure: unknown;
    try {
      let imageWritten = 0;
      for (const name of (await readdir(directory)).sort()) {
        const file = path.join(directory, name);
        if (!IMAGE_FILE.test(name) || !(await lstat(file)).isFile()) {
          throw new Error(
            `The runtime's checkpoint holds ${JSON.stringify(name)}, which is not a file sandcell keeps.`,
          );
        }
        // The snapshot's own bound (a key's quota) where it is the nearer one, else the image's.
        const left = bound.bytes - written;
        const imageLeft = options.imageBytes - imageWritten;
        const source = createReadStream(file);
        const part = await writer.part(
          `${PART_PREFIX}${name}`,
          left <= imageLeft ? bounded(source, left, bound.overflow) : bounded(source, imageLeft),
        );
        written += part.bytes;
        imageWritten += part.bytes;
        files.push(name);
      }
    } catch (error) {
      failure = error;
    }
    // The checkpoint ended the sandbox: a snapshot goes on from its image, and so does a pause whose
    // snapshot could not be kept (too large for the quota, a store that failed). Its files are where they were.
    if (options.goOn || failure !== undefined) {
      try {
        await restoreInto(sandbox, options.adoptInto, options.contexts, { directory, about, ready }, timeoutMs);
      } catch (error) {
        throw new SnapshotFailedError(
          `The sandbox was checkpointed${failure === undefined ? '' : ` (and its snapshot not kept: ${(failure as Error).message})`}, but could not be restored from its checkpoint: ${(error as Error).message}. The session's files are kept; its running state is lost.`,
          { cause: error },
        );
      }
    }
    if (failure !== undefined) throw failure;
    return { backend: options.backend, about, ready, files };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/**
 * Puts a checkpoint snapshot's sandbox in place of the session's (a fresh one, or one being rolled
 * back): its files first, through the sandbox running now, then the image restored on them. Returns
 * what came back, context by context (each whole).
 */
export async function loadCheckpoint(options: {
  sandbox: SessionSandbox;
  connection: KernelConnection;
  contexts: SessionContexts;
  store: SnapshotStore;
  manifest: SnapshotManifest;
  checkpoint: CheckpointDetails;
  saved: SavedContext[];
  backend: string;
  clean: boolean;
  timeoutMs: number;
}): Promise<RestoredContext[]> {
  const { sandbox, connection, store, manifest, checkpoint, timeoutMs } = options;
  if (checkpoint.backend !== options.backend) {
    throw new SnapshotIncompatibleError(
      manifest.id,
      `it keeps a whole ${checkpoint.backend} sandbox (its processes and memory), which only a session on the ${checkpoint.backend} backend can take in, and this session runs on ${options.backend}`,
    );
  }
  for (const name of checkpoint.files) {
    if (!IMAGE_FILE.test(name)) throw new SnapshotInvalidError(manifest.id, `its checkpoint names a file ${name}`);
  }
  const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-restore-'));
  try {
    // The image comes out of the store (verified as it is read) before anything in the session changes.
    for (const name of checkpoint.files) {
      await pipeline(store.part(manifest, `${PART_PREFIX}${name}`), createWriteStream(path.join(directory, name)));
    }
    try {
      await writeArchive(connection, store.part(manifest, ARCHIVE_PART), options.clean, timeoutMs);
    } finally {
      await endState(connection, timeoutMs).catch(() => undefined);
    }
    await restoreInto(sandbox, options.contexts, options.saved, { ...checkpoint, directory }, timeoutMs, manifest.id);
    return options.saved.map(wholeContext);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/**
 * A fork that keeps the whole sandbox: the source's files streamed into the target's sandbox, then
 * the source checkpointed and restored (it goes on), and the target restored from the same image, in
 * place of its fresh sandbox. Two sandboxes from one image share nothing: each has its own Sentry,
 * gofer, files and cgroups. Returns what came back in the target, context by context.
 */
export async function forkCheckpoint(options: {
  source: { sandbox: SessionSandbox; connection: KernelConnection; contexts: SessionContexts };
  target: { sandbox: SessionSandbox; connection: KernelConnection; contexts: SessionContexts };
  /** The source's live contexts, as a snapshot would keep them. */
  saved: SavedContext[];
  archiveBytes: number;
  timeoutMs: number;
}): Promise<RestoredContext[]> {
  const { source, target, saved, timeoutMs } = options;
  const ready = source.connection.announced;
  if (!ready) throw new Error('unreachable: a fork of a sandbox that never started');
  await saveContexts(source.connection, [], timeoutMs);
  try {
    const files = readArchive(source.connection, options.archiveBytes, timeoutMs);
    await writeArchive(target.connection, files, false, timeoutMs);
  } finally {
    await endState(source.connection, timeoutMs).catch(() => undefined);
    await endState(target.connection, timeoutMs).catch(() => undefined);
  }
  const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-fork-'));
  try {
    const about = await source.sandbox.checkpoint(source.connection, directory);
    if (!about) throw new Error('unreachable: forkCheckpoint of a sandbox that keeps no checkpoints');
    const image = { directory, about, ready };
    try {
      await restoreInto(source.sandbox, source.contexts, saved, image, timeoutMs);
    } catch (error) {
      throw new SnapshotFailedError(
        `The sandbox was checkpointed for a fork, but could not be restored from its checkpoint: ${(error as Error).message}. The session's files are kept; its running state is lost.`,
        { cause: error },
      );
    }
    await restoreInto(target.sandbox, target.contexts, saved, image, timeoutMs);
    return saved.map(wholeContext);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/**
 * `sandbox`'s session restored from the image in `image.directory`, its contexts taken up as `saved` has
 * them; resolved once the restored supervisor answers (only then may the image go).
 */
async function restoreInto(
  sandbox: SessionSandbox,
  contexts: SessionContexts,
  saved: SavedContext[],
  image: { directory: string; about: CheckpointDetails['about']; ready: CheckpointDetails['ready'] },
  timeoutMs: number,
  snapshotId = 'the checkpoint just taken',
): Promise<void> {
  const restored = await sandbox.restore({ snapshotId, directory: image.directory, about: image.about }, image.ready);
  await restored.request({ type: 'liveness' }, timeoutMs);
  for (const context of saved) contexts.adopt(context, restored);
}

function wholeContext(saved: SavedContext): RestoredContext {
  return { id: saved.id, language: saved.language, restored: [], skipped: [], whole: true };
}

/** `source`'s chunks, throwing past `maxBytes` (what `overflow` makes, by default a plain error). */
async function* bounded(
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
  overflow?: (maxBytes: number) => Error,
): AsyncGenerator<Uint8Array> {
  let bytes = 0;
  for await (const chunk of source) {
    bytes += chunk.length;
    if (bytes > maxBytes) {
      throw overflow?.(maxBytes) ?? new Error(`The runtime's checkpoint grew past the ${maxBytes} bytes it may take.`);
    }
    yield chunk;
  }
}
