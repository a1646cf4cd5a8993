/**
 * A session's state taken out of its sandbox and put back into one
 * (docs/kernel-protocol.md, "Snapshots"): each context's kernel writes its
 * state to a file in the sandbox's state directory, then one archive of the
 * files (/mnt/data, the user site) and those state files streams out in
 * chunks; loading streams it in, then each context's kernel reads its file.
 * The sandbox is untrusted: what it sends is bounded, and its reports are
 * read as data (kernel-replies.ts).
 */

import type { CheckpointAbout } from '../backends/spec.js';
import { ProtocolError } from '../errors.js';
import { joinParts } from '../internal/line-splitter.js';
import { SnapshotInvalidError } from '../snapshots/snapshot-errors.js';
import type { SnapshotManifest } from '../snapshots/snapshot-store.js';
import type { MountedVolume } from '../volumes/session-mounts.js';
import type { KernelConnection } from './kernel-connection.js';
import { FRAME_MAX_BYTES, type SkippedName } from './kernel-messages.js';
import type { ReadyEvent } from './kernel-protocol.js';
import type { Language } from './languages.js';

export type { SkippedName } from './kernel-messages.js';

/** A context as a snapshot keeps it: enough to make it again, and what of its state was kept. */
export interface SavedContext {
  id: string;
  language: Language;
  cwd: string;
  executionCount: number;
  /** The names its state holds. */
  saved: string[];
  /** The names it could not keep, and why (`socket`, `a running process is not kept`). */
  skipped: SkippedName[];
}

/** What came back of one context, and what did not (left out when saved, or failing now). */
export interface RestoredContext {
  id: string;
  language: Language;
  restored: string[];
  skipped: SkippedName[];
  /** Brought back whole, with the sandbox's checkpoint: every name, and what no name holds (threads, open files). */
  whole?: boolean;
}

/** What a resume, restore or fork brought back, per context. */
export interface RestoreReport {
  /** The snapshot it came from (none for a fork). */
  snapshotId?: string;
  /** How the state came back: the whole sandbox from its checkpoint, or each kernel's saved state. */
  kind: SnapshotKind;
  contexts: RestoredContext[];
  /** What ran when the snapshot was taken that could not be kept (commands). */
  notKept: SkippedName[];
}

/** state-writes the supervisor queues (sandcell_state.py MAX_QUEUED_WRITES). */
const WRITES_IN_FLIGHT = 2;

function stateFile(directory: string, contextId: string): string {
  return `${directory}/context-${contextId}.state`;
}

/**
 * Asks every context's kernel to write its state, then gives the archive's
 * bytes as they come. The caller must consume the stream to its end (or stop
 * early, which abandons the archive) and then call endState.
 */
export async function saveContexts(
  connection: KernelConnection,
  contexts: { id: string; language: Language; cwd: string }[],
  timeoutMs: number,
): Promise<SavedContext[]> {
  const { directory } = await connection.request({ type: 'state-begin', mode: 'save' }, timeoutMs);
  const saved: SavedContext[] = [];
  for (const context of contexts) {
    const report = await connection.request(
      { type: 'state-save', context: context.id, path: stateFile(directory, context.id) },
      timeoutMs,
    );
    saved.push({ id: context.id, language: context.language, cwd: context.cwd, ...report });
  }
  return saved;
}

/**
 * The archive saveContexts made, in chunks. More than `maxBytes` throws what
 * `overflow` makes: by default the sandbox misbehaving (more than its files
 * can hold), or a caller's own bound (a snapshot's quota).
 */
export async function* readArchive(
  connection: KernelConnection,
  maxBytes: number,
  timeoutMs: number,
  overflow: (maxBytes: number) => Error = archiveOverflow,
): AsyncGenerator<Uint8Array> {
  for await (const parts of readPieces(connection, maxBytes, timeoutMs, overflow)) yield joinParts(parts);
}

/** readArchive's chunks, each in the pieces it came in from the sandbox (a relay writes them on as they are). */
async function* readPieces(
  connection: KernelConnection,
  maxBytes: number,
  timeoutMs: number,
  overflow: (maxBytes: number) => Error = archiveOverflow,
): AsyncGenerator<Buffer[]> {
  let offset = 0;
  let pending = connection.request({ type: 'state-read', offset }, timeoutMs);
  try {
    for (;;) {
      const { parts, bytes, eof } = await pending;
      offset += bytes;
      if (offset > maxBytes) throw overflow(maxBytes);
      if (!eof && bytes === 0) throw new ProtocolError('The sandbox sent an empty chunk of its snapshot archive.');
      // The next chunk is asked for while the consumer writes this one.
      if (!eof) pending = connection.request({ type: 'state-read', offset }, timeoutMs);
      if (bytes > 0) yield parts;
      if (eof) return;
    }
  } finally {
    // A consumer that stopped early leaves a read in flight: its answer (or failure) is not wanted.
    pending.catch(() => undefined);
  }
}

function archiveOverflow(maxBytes: number): Error {
  return new ProtocolError(`The sandbox's snapshot archive grew past ${maxBytes} bytes, more than its files can hold.`);
}

/**
 * Streams an archive into the sandbox (`clean`: its files are replaced, not
 * added to). The last chunk goes only once `source` has ended without an error
 * (a snapshot's part verifies its hash at its end), so nothing of a part that
 * fails its check is ever loaded into a kernel.
 */
export async function writeArchive(
  connection: KernelConnection,
  source: AsyncIterable<Uint8Array>,
  clean: boolean,
  timeoutMs: number,
): Promise<string> {
  const { directory } = await connection.request({ type: 'state-begin', mode: 'load', clean }, timeoutMs);
  await writeFrames(connection, source, timeoutMs);
  return directory;
}

/**
 * Streams `source` into what the sandbox takes now (an archive begun, or a context's state pipe) as
 * state-write frames, the last with `eof` once `source` has ended without an error.
 */
export async function writeFrames(
  connection: KernelConnection,
  source: AsyncIterable<Uint8Array>,
  timeoutMs: number,
): Promise<void> {
  const frames = frameWriter(connection, timeoutMs);
  const write = frames.write;
  // Frames of the most the supervisor takes at once; what is short of that waits for more.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of source) {
    pending.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    pendingBytes += chunk.byteLength;
    // Over (not at) a frame's worth, so the last frame always has bytes to send with `eof`.
    while (pendingBytes > FRAME_MAX_BYTES) {
      const joined = Buffer.concat(pending);
      pending = [joined.subarray(FRAME_MAX_BYTES)];
      pendingBytes = joined.length - FRAME_MAX_BYTES;
      await write([joined.subarray(0, FRAME_MAX_BYTES)], false);
    }
  }
  await write([Buffer.concat(pending)], true);
  await frames.done();
}

/**
 * state-write frames, two in flight (the supervisor holds the next while what it feeds takes the
 * one before); `done` waits for every answer. A frame may be given in pieces.
 */
function frameWriter(connection: KernelConnection, timeoutMs: number) {
  const inFlight: Promise<unknown>[] = [];
  return {
    async write(frame: readonly Buffer[], eof: boolean): Promise<void> {
      if (inFlight.length >= WRITES_IN_FLIGHT) await inFlight.shift();
      const bytes = frame.reduce((sum, part) => sum + part.length, 0);
      const written = connection.request({ type: 'state-write', bytes, eof }, timeoutMs, frame);
      written.catch(() => undefined); // awaited in its turn
      inFlight.push(written);
    },
    async done(): Promise<void> {
      for (const written of inFlight) await written;
    },
  };
}

/**
 * A live sandbox's bytes into another's state pipe: each chunk as it comes, as its own frame in the
 * pieces it came in (no check waits at the end, as a snapshot's hash does), then an empty frame
 * with `eof`.
 */
async function relayFrames(
  target: KernelConnection,
  source: AsyncIterable<Buffer[]>,
  timeoutMs: number,
): Promise<void> {
  const frames = frameWriter(target, timeoutMs);
  for await (const parts of source) await frames.write(parts, false);
  await frames.write([], true);
  await frames.done();
}

/** Each context's kernel reads back the state the archive brought (or, given `path`, its state pipe). */
export async function loadContext(
  connection: KernelConnection,
  directory: string,
  context: { id: string; language: Language },
  timeoutMs: number,
  path = stateFile(directory, context.id),
): Promise<RestoredContext & { executionCount: number }> {
  const report = await connection.request({ type: 'state-load', context: context.id, path }, timeoutMs);
  return { id: context.id, language: context.language, ...report };
}

/**
 * A Python context's state streamed from one sandbox into another through a pipe in each
 * (sandcell_state.Pipe), after their archives: the source's kernel writes it as the host reads it,
 * the target's kernel reads it as the host writes it, so the dump, the transfer and the load
 * overlap. `restore` makes the context in the target (its kernel started) once the pipes are open.
 */
export async function pipeContext(
  source: KernelConnection,
  target: KernelConnection,
  context: { id: string; language: Language },
  options: { maxBytes: number; timeoutMs: number; restore: () => Promise<unknown> },
): Promise<RestoredContext & { executionCount: number }> {
  const { timeoutMs } = options;
  const name = `context-${context.id}.pipe`;
  const [from, into] = await Promise.all([
    source.request({ type: 'state-pipe', mode: 'save', name }, timeoutMs),
    target.request({ type: 'state-pipe', mode: 'load', name }, timeoutMs),
  ]);
  await options.restore();
  // Asked together: each waits on the others' bytes. One failing fails the fork (state-end then
  // closes both pipes, so the others end too).
  const [, loaded] = await Promise.all([
    source.request({ type: 'state-save', context: context.id, path: from.path, stream: true }, timeoutMs),
    loadContext(target, '', context, timeoutMs, into.path),
    relayFrames(target, readPieces(source, options.maxBytes, timeoutMs), timeoutMs),
  ]);
  return loaded;
}

/** The state directory goes, and any archive under way with it. */
export async function endState(connection: KernelConnection, timeoutMs: number): Promise<void> {
  if (connection.alive) await connection.request({ type: 'state-end' }, timeoutMs);
}

/** What a checkpoint snapshot keeps beside its parts (in its signed details). */
export interface CheckpointDetails {
  /** The backend that wrote it: only the same backend restores it. */
  backend: string;
  /** The backend's own facts for its restore (the uid, the runtime's version). */
  about: CheckpointAbout;
  /** What the supervisor announced when it first started: the restored one goes on without saying it again. */
  ready: ReadyEvent;
  /** The image's files, each a part named `checkpoint-<file>`. */
  files: string[];
}

/** What a snapshot keeps beside its archive (the manifest's details, signed with it). */
export interface SnapshotDetails {
  /** The environment its sandbox ran: a resume runs the same one. */
  environment: string;
  contexts: SavedContext[];
  /** What ran that a snapshot cannot keep (commands), with why. */
  notKept: SkippedName[];
  /** The volumes that were mounted, and where: their contents are the volumes', not the snapshot's. */
  mounts?: MountedVolume[];
  /** The name it was taken under, if any (SnapshotOptions.name). */
  name?: string;
  /** Where the snapshot keeps the whole sandbox (its backend's checkpoint), what its restore needs. */
  checkpoint?: CheckpointDetails;
}

/** A snapshot as a user sees it. */
export interface SnapshotInfo {
  id: string;
  sessionId: string;
  createdAt: string;
  /** Its size in the store. */
  bytes: number;
  environment: string;
  contexts: SavedContext[];
  notKept: SkippedName[];
  /** The volumes mounted when it was taken (a resume mounts them again). */
  mounts: MountedVolume[];
  name?: string;
  /**
   * What it keeps of the running code: `checkpoint`, the whole sandbox (its backend's checkpoint:
   * memory, threads, open files, processes); `kernel-state`, each kernel's variables, as the kernel
   * saved them (what pickles, in Python).
   */
  kind: SnapshotKind;
}

/** What a snapshot keeps of running code: the whole sandbox (`checkpoint`), or each kernel's saved state. */
export type SnapshotKind = 'checkpoint' | 'kernel-state';

/** The name of the archive's part in a snapshot. */
export const ARCHIVE_PART = 'sandbox.tar';

/** The archive's room beyond /mnt/data and /tmp: tar's headers and padding. */
export const ARCHIVE_SLACK_BYTES = 64 * 1024 * 1024;

/** A manifest's details, as this version wrote them; anything else is not a snapshot it can load. */
export function readDetails(manifest: SnapshotManifest): SnapshotDetails {
  const details = manifest.details as Partial<SnapshotDetails>;
  if (
    typeof details.environment !== 'string' ||
    !Array.isArray(details.contexts) ||
    !Array.isArray(details.notKept) ||
    (details.mounts !== undefined && !Array.isArray(details.mounts)) ||
    !manifest.parts.some((part) => part.name === ARCHIVE_PART) ||
    (details.checkpoint !== undefined && !isCheckpointDetails(details.checkpoint))
  ) {
    throw new SnapshotInvalidError(manifest.id, 'it was not written by this version of sandcell');
  }
  return details as SnapshotDetails;
}

export function snapshotInfo(
  manifest: SnapshotManifest,
  details: SnapshotDetails = readDetails(manifest),
): SnapshotInfo {
  return {
    id: manifest.id,
    sessionId: manifest.sessionId,
    createdAt: manifest.createdAt,
    bytes: manifest.parts.reduce((total, part) => total + part.bytes, 0),
    environment: details.environment,
    contexts: details.contexts,
    notKept: details.notKept,
    mounts: details.mounts ?? [],
    ...(typeof details.name === 'string' ? { name: details.name } : {}),
    kind: details.checkpoint ? 'checkpoint' : 'kernel-state',
  };
}

function isCheckpointDetails(value: unknown): value is CheckpointDetails {
  const checkpoint = value as Partial<CheckpointDetails> | null;
  return (
    typeof checkpoint === 'object' &&
    checkpoint !== null &&
    typeof checkpoint.backend === 'string' &&
    typeof checkpoint.about === 'object' &&
    checkpoint.about !== null &&
    typeof checkpoint.ready === 'object' &&
    checkpoint.ready !== null &&
    Array.isArray(checkpoint.files) &&
    checkpoint.files.every((file) => typeof file === 'string')
  );
}
