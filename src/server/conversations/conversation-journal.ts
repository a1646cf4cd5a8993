/**
 * Writes one conversation's history file (history-records.ts) as the
 * conversation changes, one write at a time.
 *
 * When it writes: a new turn at once (the question is on disk before any code
 * runs); a running turn at most once a second (its output streams, and each
 * record is the whole turn); a settled turn at once. Snapshots that pile up
 * while a write is in flight collapse into the newest.
 *
 * fsync: after a settled turn, the header and a rewrite — the points a user
 * sees as "done". Every other record reaches the kernel when its write
 * returns, so killing the server loses nothing written; only a machine crash
 * can lose the last second of a running turn, which then reads as torn and is
 * skipped.
 *
 * The file only grows between rewrites: once it is three times the history it
 * holds (plus some room), or when older turns changed (outputs or turns were
 * dropped to stay within bounds), it is rewritten whole — to a temporary file,
 * synced, then renamed over the old one, so a crash leaves one or the other.
 */
import { constants } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Turn } from '../../protocol/index.js';
import type { StoredImage } from '../core/image-store.js';
import { encodeRecord, type HeaderRecord } from './history-records.js';

/** What the journal reads from its conversation when it writes. */
export interface JournalSource {
  header(): HeaderRecord;
  readonly title: string;
  readonly titled: boolean;
  readonly updatedAt: number;
  readonly droppedTurns: number;
  readonly mode?: 'chat' | 'notebook' | undefined;
  readonly turns: readonly Turn[];
  readonly historyBytes: number;
  readonly images: { values(): Iterable<StoredImage> };
}

const RUNNING_TURN_INTERVAL_MS = 1_000;
const REWRITE_SLACK_BYTES = 4 * 1024 * 1024;
export const FILE_MODE = 0o600;

export class ConversationJournal {
  private readonly pending = new Map<string, Turn>();
  private readonly imagesWritten = new Set<string>();
  private rewriteWanted = false;
  private modeWanted = false;
  private headerWritten: boolean;
  private bytesWritten: number;
  private writing?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private deleted = false;
  private failureLogged = false;

  /** `existingBytes`: the size of a file read back at start-up (its header and images are on disk). */
  constructor(
    readonly file: string,
    private readonly source: JournalSource,
    private readonly logger: Logger,
    existing?: { bytes: number; images: Iterable<string> },
  ) {
    this.headerWritten = existing !== undefined;
    this.bytesWritten = existing?.bytes ?? 0;
    for (const name of existing?.images ?? []) this.imagesWritten.add(name);
  }

  /** The conversation exists: its header goes to disk now. */
  created(): void {
    this.schedule();
  }

  /** A turn was added or changed. */
  turnChanged(turn: Turn): void {
    const first = !this.pending.has(turn.id) && turn.status === 'running' && turn.steps.length === 0;
    this.pending.set(turn.id, turn);
    if (first || turn.status !== 'running') this.schedule();
    else this.timer ??= setTimeout(() => this.schedule(), RUNNING_TURN_INTERVAL_MS).unref();
  }

  /** A client chose how it is shown. */
  modeChanged(): void {
    this.modeWanted = true;
    this.schedule();
  }

  /** Older turns changed (outputs or turns dropped): the file is rewritten from the conversation as it is. */
  rewrite(): void {
    this.rewriteWanted = true;
    this.schedule();
  }

  /** Resolves when everything asked for so far is written. */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Stops writing and removes the file. */
  async delete(): Promise<void> {
    this.deleted = true;
    clearTimeout(this.timer);
    await this.flushed();
    await rm(this.file, { force: true });
    await rm(`${this.file}.tmp`, { force: true });
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writing || this.deleted) return;
    this.writing = this.writeAll()
      .catch((error) => this.failed(error))
      .finally(() => {
        this.writing = undefined;
        if (!this.deleted && (this.pending.size > 0 || this.rewriteWanted || this.modeWanted) && !this.timer) {
          this.schedule();
        }
      });
  }

  private async writeAll(): Promise<void> {
    while (!this.deleted && (this.pending.size > 0 || this.rewriteWanted || this.modeWanted || !this.headerWritten)) {
      if (this.rewriteWanted || !this.headerWritten) {
        this.rewriteWanted = false;
        this.modeWanted = false; // the header carries it
        this.pending.clear();
        await this.rewriteFile();
        continue;
      }
      const turns = [...this.pending.values()];
      this.pending.clear();
      const mode = this.modeWanted ? this.source.mode : undefined;
      this.modeWanted = false;
      const lines = [
        ...(mode ? [encodeRecord({ type: 'mode', mode })] : []),
        ...this.newImageLines(),
        ...turns.map((turn) => this.turnLine(turn)),
      ];
      await this.append(
        lines.join(''),
        turns.some((turn) => turn.status !== 'running'),
      );
      if (this.bytesWritten > 3 * this.source.historyBytes + REWRITE_SLACK_BYTES) this.rewriteWanted = true;
    }
  }

  private turnLine(turn: Turn): string {
    const { title, titled, updatedAt, droppedTurns } = this.source;
    return encodeRecord({ type: 'turn', title, titled, updatedAt, droppedTurns, turn });
  }

  private *newImageLines(): Generator<string> {
    for (const image of this.source.images.values()) {
      if (this.imagesWritten.has(image.name)) continue;
      this.imagesWritten.add(image.name);
      yield encodeRecord({
        type: 'image',
        name: image.name,
        mimeType: image.mimeType,
        data: image.data.toString('base64'),
      });
    }
  }

  private async append(text: string, sync: boolean): Promise<void> {
    const handle = await open(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, FILE_MODE);
    try {
      await handle.writeFile(text);
      if (sync) await handle.datasync();
    } finally {
      await handle.close();
    }
    this.bytesWritten += Buffer.byteLength(text);
  }

  /** The whole history, written beside the file and renamed over it. */
  private async rewriteFile(): Promise<void> {
    this.imagesWritten.clear();
    const lines = [
      encodeRecord(this.source.header()),
      ...this.newImageLines(),
      ...this.source.turns.map((turn) => this.turnLine(turn)),
    ];
    const text = lines.join('');
    const temporary = `${this.file}.tmp`;
    const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, FILE_MODE);
    try {
      await handle.writeFile(text);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    if (this.deleted) return;
    await rename(temporary, this.file);
    await syncDirectory(path.dirname(this.file));
    this.headerWritten = true;
    this.bytesWritten = Buffer.byteLength(text);
  }

  /** A full disk or a removed directory must not stop the conversation: it goes on in memory. */
  private failed(error: unknown): void {
    if (this.failureLogged) return;
    this.failureLogged = true;
    this.logger.error(
      { err: error, file: this.file },
      'cannot write a conversation history: it goes on in memory and will not survive a restart',
    );
  }
}

/** Makes a rename in the directory durable. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, constants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
