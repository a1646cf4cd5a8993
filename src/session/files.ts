/**
 * session.files: the session's /mnt/data (relative paths, or under /mnt/data/), and its scratch
 * /tmp (paths under /tmp/, answered as such; not kept by pauses beyond the user site). Every operation goes through the
 * kernel inside the sandbox, so the host never resolves a path the sandboxed
 * code could have planted (a symlink to /etc/passwd reads as an error, not as
 * the host's file), and it works the same on every backend.
 */
import { mkdir } from 'node:fs/promises';
import hostPath from 'node:path';
import { FileOperationError, InvalidInputError } from '../errors.js';
import { normalizeDataPath, normalizeSessionPath } from '../internal/data-path.js';
import { writeNewFile } from '../internal/new-file.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { FRAME_MAX_BYTES } from './kernel-messages.js';
import type { FileRequest, KernelFileEntry, ReplyTo } from './kernel-protocol.js';
import type { LimitNames } from './limit-names.js';

export type FileEntry = KernelFileEntry;

/** What stream() reads per request to the sandbox at most, and by default: one frame. */
export const STREAM_CHUNK_MAX_BYTES = FRAME_MAX_BYTES;

/** The chunks stream() asks the sandbox for ahead of the one it hands on: its supervisor answers in order, so they keep its pipe full. */
const READ_AHEAD_CHUNKS = 3;

export interface FileStreamOptions {
  /**
   * The most bytes one request to the sandbox reads, and so the most one chunk holds.
   * @default 4 MiB (STREAM_CHUNK_MAX_BYTES, also the most it may be)
   */
  chunkBytes?: number;
  /**
   * The size the caller counts on (the file's `size` in list(), sent on as a
   * Content-Length, say): a file of another size is refused before the first
   * chunk is yielded, so what is yielded is exactly this many bytes or an error.
   */
  expectedBytes?: number;
}

export interface FileLimits {
  /** The largest file moved in or out. */
  transferBytes: number;
  /** What /mnt/data holds at most. */
  dataCapacityBytes: number;
  names: LimitNames;
}

/**
 * Sends a file request to the session's kernel (starting one if needed) and resolves with its
 * reply; `frame`: the raw bytes the request's line announces (a file-write-chunk's).
 */
export type KernelRequester = <Request extends FileRequest>(
  request: Request,
  frame?: Uint8Array,
) => Promise<ReplyTo<Request>>;

export interface FileWriteStreamOptions {
  /**
   * The most bytes the file may have: past it the write stops with a FileOperationError
   * (`too-large`) and what was written is removed. The session's /mnt/data capacity bounds it
   * anyway (`no-space`).
   */
  maxBytes?: number;
  /** Says past how many bytes `maxBytes` was passed, in the caller's words (a server's upload limit, say). */
  tooLarge?: (maxBytes: number) => string;
}

export class SessionFiles {
  constructor(
    private readonly send: KernelRequester,
    private readonly limits: FileLimits,
  ) {}

  /** The largest file write() and read() move in or out (the session's `fileTransferBytes`). */
  get transferBytes(): number {
    return this.limits.transferBytes;
  }

  /** Sends a file request; a limit the kernel hit is said in the words of where the session was made. */
  private readonly request: KernelRequester = async (request, frame) => {
    try {
      return await this.send(request, frame);
    } catch (error) {
      if (!(error instanceof FileOperationError)) throw error;
      const { transferBytes, dataCapacityBytes, names } = this.limits;
      if (error.reason === 'too-large') {
        throw new FileOperationError(
          'too-large',
          `${request.path} is larger than ${formatBytes(transferBytes)}, the most a file moved in or out of the session may be; ${names.fileTransferBytes}.`,
        );
      }
      if (error.reason === 'no-space') {
        throw new FileOperationError(
          'no-space',
          `${request.path}: no space left in /mnt/data, which holds at most ${formatBytes(dataCapacityBytes)}; remove files, or ${names.dataBytes}.`,
        );
      }
      throw error;
    }
  };

  /** Writes (creating parent directories, replacing any file) `data` at `path` under /mnt/data. */
  async write(path: string, data: string | Uint8Array): Promise<{ path: string; size: number }> {
    const relative = normalizeSessionPath(path);
    if (!(typeof data === 'string' || data instanceof Uint8Array)) {
      throw new InvalidInputError('File data must be a string or a Uint8Array.');
    }
    const bytes =
      typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const { transferBytes, names } = this.limits;
    if (bytes.length > transferBytes) {
      throw new InvalidInputError(
        `${path} is ${formatBytes(bytes.length)}, over ${formatBytes(transferBytes)}, the most a file moved in or out of the session may be; ${names.fileTransferBytes}.`,
      );
    }
    await this.request({ type: 'file-write', path: relative, data: bytes.toString('base64') });
    return { path: relative, size: bytes.length };
  }

  /**
   * Writes the bytes `source` yields at `path` (creating parent directories, replacing any file),
   * a frame of up to 4 MiB per request to the sandbox, so a file of any size (not bounded by the
   * transfer limit, as write() is) passes through the host in bounded memory: the piece being
   * written and the next one gathered. A write that fails part-way (the source's error, no
   * space, `maxBytes`) removes what it wrote, unless something else wrote to the file meanwhile
   * (`changed`), and rethrows; one whose first piece is refused touches nothing.
   */
  async writeStream(
    path: string,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options: FileWriteStreamOptions = {},
  ): Promise<{ path: string; size: number }> {
    const relative = normalizeSessionPath(path);
    const { maxBytes = Number.MAX_SAFE_INTEGER } = options;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new InvalidInputError('maxBytes must be an integer of at least 0.');
    }
    let offset = 0;
    let writing: Promise<unknown> | undefined;
    // Whether a piece was written: only then is there a file of this write's to remove on a failure
    // (a first piece refused, say at a FIFO the code made, leaves what is there alone).
    let made = false;
    const send = async (piece: Buffer) => {
      await writing; // one piece in flight: its reply comes before the next is sent
      const request = { type: 'file-write-chunk', path: relative, offset, bytes: piece.length } as const;
      offset += piece.length;
      writing = this.request(request, piece).then(() => {
        made = true;
      });
      // Its failure is the write's: awaited by the next send or at the end, never unhandled meanwhile.
      writing.catch(() => undefined);
    };
    try {
      let pieces: Buffer[] = [];
      let gathered = 0;
      for await (const chunk of source) {
        let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (offset + gathered + bytes.length > maxBytes) {
          throw new FileOperationError(
            'too-large',
            options.tooLarge?.(maxBytes) ?? `${relative} is over ${formatBytes(maxBytes)}, the most it may be.`,
          );
        }
        while (gathered + bytes.length >= FRAME_MAX_BYTES) {
          const room = FRAME_MAX_BYTES - gathered;
          pieces.push(bytes.subarray(0, room));
          bytes = bytes.subarray(room);
          await send(Buffer.concat(pieces, FRAME_MAX_BYTES));
          pieces = [];
          gathered = 0;
        }
        if (bytes.length > 0) {
          // A copy: the source may reuse its buffer once the chunk is handed on.
          pieces.push(Buffer.from(bytes));
          gathered += bytes.length;
        }
      }
      // The last piece, or the one empty piece that makes an empty file.
      if (gathered > 0 || offset === 0) await send(Buffer.concat(pieces, gathered));
      await writing;
      return { path: relative, size: offset };
    } catch (error) {
      await writing?.catch(() => undefined);
      if (made && !(error instanceof FileOperationError && error.reason === 'changed')) {
        await this.request({ type: 'file-remove', path: relative }).catch(() => undefined);
      }
      throw error;
    }
  }

  /** Reads a regular file. Symlinks, hard-linked files, devices and FIFOs are refused. */
  async read(path: string): Promise<Buffer> {
    const reply = await this.request({ type: 'file-read', path: normalizeSessionPath(path) });
    return Buffer.from(reply.data, 'base64');
  }

  /**
   * Reads a regular file as chunks, one request to the sandbox each, so a file
   * of any size (not bounded by the transfer limit, as read() is) passes
   * through the host in bounded memory. Refuses what read() refuses. A file
   * whose size or modification time changes between chunks ends the stream
   * with a FileOperationError: its bytes would belong to no one version.
   * Its size is known beforehand from list(); pass it as `expectedBytes` to
   * be sure the stream yields exactly that.
   */
  stream(path: string, options: FileStreamOptions = {}): AsyncGenerator<Buffer, void, undefined> {
    const relative = normalizeSessionPath(path);
    const { chunkBytes = STREAM_CHUNK_MAX_BYTES, expectedBytes } = options;
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1 || chunkBytes > STREAM_CHUNK_MAX_BYTES) {
      throw new InvalidInputError(
        `chunkBytes must be an integer from 1 to ${STREAM_CHUNK_MAX_BYTES} (${formatBytes(STREAM_CHUNK_MAX_BYTES)}).`,
      );
    }
    if (expectedBytes !== undefined && !(Number.isSafeInteger(expectedBytes) && expectedBytes >= 0)) {
      throw new InvalidInputError('expectedBytes must be an integer of at least 0.');
    }
    return this.chunks(relative, chunkBytes, expectedBytes);
  }

  private async *chunks(
    path: string,
    chunkBytes: number,
    expectedBytes: number | undefined,
  ): AsyncGenerator<Buffer, void, undefined> {
    type Chunk = ReplyTo<Extract<FileRequest, { type: 'file-chunk' }>>;
    let first: { size: number; modifiedNs: number } | undefined;
    let offset = 0;
    // Requests asked for ahead, in order from `offset`; `asked` is where the next one starts. The
    // sandbox reads them while the caller uploads what came before (READ_AHEAD_CHUNKS at most in flight).
    let ahead: Promise<Chunk>[] = [];
    let asked = 0;
    const ask = () => {
      const chunk = this.request({ type: 'file-chunk', path, offset: asked, bytes: chunkBytes });
      chunk.catch(() => undefined); // awaited in its turn; a caller that stops early does not want it
      ahead.push(chunk);
      asked += chunkBytes;
    };
    ask();
    try {
      for (;;) {
        const chunk: Chunk = await (ahead.shift() as Promise<Chunk>);
        if (first === undefined) {
          first = chunk;
          if (expectedBytes !== undefined && chunk.size !== expectedBytes) {
            throw new FileOperationError(
              'changed',
              `${path} is ${chunk.size} bytes, not the ${expectedBytes} expected: it changed since its size was taken; list it again.`,
            );
          }
        } else if (chunk.size !== first.size || chunk.modifiedNs !== first.modifiedNs) {
          throw new FileOperationError(
            'changed',
            `${path} changed while it was read (at byte ${offset} of ${first.size}); read it again once nothing writes to it.`,
          );
        }
        // The reply was checked against the request (kernel-replies.ts): a chunk short of the end holds at least a byte.
        offset += chunk.data.length;
        if (!chunk.eof) {
          // A chunk shorter than asked moves every later offset: what was asked ahead is asked again from here.
          if (asked !== offset + ahead.length * chunkBytes) {
            ahead = [];
            asked = offset;
          }
          while (ahead.length < READ_AHEAD_CHUNKS && asked < first.size) ask();
          if (ahead.length === 0) ask();
        }
        if (chunk.data.length > 0) yield chunk.data;
        if (chunk.eof) return;
      }
    } finally {
      ahead = [];
    }
  }

  /** Lists a directory (default: /mnt/data itself). */
  async list(path = '', options: { recursive?: boolean } = {}): Promise<FileEntry[]> {
    const reply = await this.request({
      type: 'file-list',
      path: normalizeSessionPath(path, { allowRoot: true }),
      recursive: options.recursive === true,
    });
    return reply.entries;
  }

  /**
   * Copies the file at `path` into the host directory `directory`, at the same
   * relative path — or, when a file is there already, beside it with a number
   * (`chart-2.png`): nothing on the host is overwritten. Returns where it was saved, or undefined when the name is not
   * a usable data path, would land outside `directory`, or cannot be read.
   */
  async saveTo(path: string, directory: string): Promise<string | undefined> {
    let relative: string;
    try {
      relative = normalizeDataPath(path);
    } catch {
      return undefined;
    }
    const root = hostPath.resolve(directory);
    const target = hostPath.resolve(root, relative);
    if (!target.startsWith(`${root}${hostPath.sep}`)) return undefined;
    const content = await this.read(relative).catch(() => undefined);
    if (!content) return undefined;
    await mkdir(hostPath.dirname(target), { recursive: true });
    return writeNewFile(target, content);
  }

  /** Removes a file, symlink or directory (recursively). */
  async remove(path: string): Promise<void> {
    await this.request({ type: 'file-remove', path: normalizeSessionPath(path) });
  }
}
