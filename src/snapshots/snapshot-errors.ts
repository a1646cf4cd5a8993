/** What a snapshot store refuses: a snapshot that is not there, one that does not verify, one too large. */
import { SandcellError } from '../errors.js';

/** No snapshot by that id for this owner (another key's is "not found" too). */
export class SnapshotNotFoundError extends SandcellError {
  constructor(readonly snapshotId: string) {
    super(
      'snapshot-not-found',
      `No snapshot ${JSON.stringify(snapshotId)} (it may have been deleted, or pruned by retention).`,
    );
  }
}

/** The snapshot failed its integrity check, so nothing of it was loaded; `reason` says what failed. */
export class SnapshotInvalidError extends SandcellError {
  constructor(
    readonly snapshotId: string,
    readonly reason: string,
  ) {
    super(
      'snapshot-invalid',
      `The snapshot ${snapshotId} was refused: ${reason}. Nothing of it was loaded; take a new snapshot.`,
    );
  }
}

/**
 * The snapshot would be larger than it may (`SnapshotOptions.maxBytes`: a
 * server gives the room left in its key's snapshot quota). Nothing was kept,
 * and the session is as it was.
 */
export class SnapshotTooLargeError extends SandcellError {
  constructor(
    readonly maxBytes: number,
    message = `The snapshot would be larger than the ${maxBytes} bytes it may take; nothing was kept. Remove files from /mnt/data, or allow more (\`maxBytes\`).`,
  ) {
    super('snapshot-too-large', message);
  }
}

/**
 * The sandbox's runtime could not save it (gVisor's checkpoint failed): nothing was kept. A pause leaves
 * the session as it was where its sandbox still runs, and says when it does not.
 */
export class SnapshotFailedError extends SandcellError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('snapshot-failed', message, options);
  }
}

/**
 * A snapshot this session cannot take in: a whole-sandbox checkpoint (gVisor's) resumed on another
 * backend, or on a runtime of another version. Nothing of it was loaded; the session is as it was.
 */
export class SnapshotIncompatibleError extends SandcellError {
  constructor(
    readonly snapshotId: string,
    reason: string,
  ) {
    super('snapshot-incompatible', `The snapshot ${snapshotId} cannot be resumed here: ${reason}.`);
  }
}

/**
 * A session whose state could not be kept: its pause failed, so there is no
 * snapshot to resume it from. Said rather than handing out a fresh sandbox
 * under the old id.
 */
export class SessionLostError extends SandcellError {
  constructor(
    readonly sessionId: string,
    readonly reason: string,
  ) {
    super(
      'session-lost',
      `The session ${JSON.stringify(sessionId)} was lost: ${reason}. Its state cannot be brought back; create a new session.`,
    );
  }
}
