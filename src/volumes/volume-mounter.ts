/**
 * The host's mounter of volumes (sandcell_mounter.py), as root: one Python process per server,
 * started with the first mount, asked a line of JSON per request. A mount it stages is an idmapped
 * bind of a volume's directory at a host path, which the session's sandboxes bind in (every
 * backend binds a host directory the same way), showing the volume's files as the session's own.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FileErrorReason, FileOperationError } from '../errors.js';
import { LineSplitter } from '../internal/line-splitter.js';
import { VolumesUnavailableError } from './volume-errors.js';

const MOUNTER_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sandcell_mounter.py');
/** A request the mounter has not answered in this long fails (it makes a user namespace and a mount). */
const ANSWER_TIMEOUT_MS = 10_000;
const ANSWER_BYTES = 64 * 1024;

export interface StageRequest {
  /** The volume's directory on the host. */
  source: string;
  /** The directory of the volume to mount, relative to `source` ('' for all of it). */
  subPath: string;
  /** An empty host directory the mount goes on. */
  target: string;
  readOnly: boolean;
  /** The session's host uid and gid, which the files show as; absent, no id mapping. */
  owner?: { uid: number; gid: number };
  /** Who owns the files on disk. */
  fileOwner: { uid: number; gid: number };
}

interface Pending {
  resolve(): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

export class VolumeMounter {
  private child?: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  stage(request: StageRequest): Promise<void> {
    return this.ask({
      op: 'stage',
      source: request.source,
      subPath: request.subPath,
      target: request.target,
      readOnly: request.readOnly,
      ...(request.owner ? { uid: request.owner.uid, gid: request.owner.gid } : {}),
      fileUid: request.fileOwner.uid,
      fileGid: request.fileOwner.gid,
    });
  }

  unstage(target: string): Promise<void> {
    return this.ask({ op: 'unstage', target });
  }

  close(): void {
    this.child?.stdin?.end();
    this.child = undefined;
  }

  private ask(request: Record<string, unknown>): Promise<void> {
    const child = this.process();
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new VolumesUnavailableError(`The volume mounter did not answer within ${ANSWER_TIMEOUT_MS / 1000} s.`));
      }, ANSWER_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      child.stdin?.write(`${JSON.stringify({ ...request, id })}\n`);
    });
  }

  private process(): ChildProcess {
    if (this.child && this.child.exitCode === null && !this.child.killed) return this.child;
    const child = spawn('python3', ['-I', MOUNTER_SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child = child;
    const lines = new LineSplitter(
      () => ANSWER_BYTES,
      (line) => this.answered(line),
      () => undefined,
    );
    child.stdout?.on('data', (chunk: Buffer) => lines.push(chunk));
    const fail = (error: Error) => {
      if (this.child === child) this.child = undefined;
      for (const [id, pending] of this.pending) {
        clearTimeout(pending.timer);
        pending.reject(error);
        this.pending.delete(id);
      }
    };
    child.on('error', (error) =>
      fail(new VolumesUnavailableError(`Volumes need python3 on the host to mount them (${error.message}).`)),
    );
    child.on('exit', () =>
      fail(new VolumesUnavailableError('The volume mounter stopped; the next mount starts it again.')),
    );
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    return child;
  }

  private answered(line: string): void {
    let reply: { id?: number; ok?: boolean; error?: string; reason?: string };
    try {
      reply = JSON.parse(line) as typeof reply;
    } catch {
      return;
    }
    const pending = reply.id === undefined ? undefined : this.pending.get(reply.id);
    if (!pending || reply.id === undefined) return;
    this.pending.delete(reply.id);
    clearTimeout(pending.timer);
    if (reply.ok) pending.resolve();
    else {
      const reason = (['not-found', 'not-a-directory', 'invalid-path'] as const).find(
        (known) => known === reply.reason,
      );
      pending.reject(
        reason
          ? new FileOperationError(reason as FileErrorReason, `Cannot mount the volume: ${reply.error ?? reason}.`)
          : new VolumesUnavailableError(`Cannot mount the volume: ${reply.error ?? 'the mounter failed'}.`),
      );
    }
  }
}
