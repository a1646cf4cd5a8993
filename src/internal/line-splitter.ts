/**
 * Splits a byte stream into newline-terminated lines within a size bound. A
 * line over the bound is skipped as it streams past, never buffered, and
 * reported by its size when it ends: a sender flooding oversized lines costs
 * scanning time, not memory. A line may announce raw bytes after it (a binary
 * frame): the line's handler calls `expectBytes`, and the bytes that follow go
 * to its callback whole, never read as lines, in the pieces they came in (a
 * frame relayed on is written on as they are, never joined).
 */

/** Raw bytes a line announced, still to come. */
interface Frame {
  remaining: number;
  chunks: Buffer[];
  done: (parts: Buffer[]) => void;
}

/** A frame's pieces as one buffer (a copy, unless it came in one piece). */
export function joinParts(parts: readonly Buffer[]): Buffer {
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

export class LineSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes of the oversized line being skipped, or undefined when none is. */
  private skipped?: number;
  private frame?: Frame;

  /**
   * @param maxLineBytes the bound for the line being read, asked as its bytes
   *   arrive (it may change, e.g. while a large reply is expected)
   * @param onLine each complete line within the bound, and its length in bytes
   * @param onOversizedLine the length of each line that went past the bound
   */
  constructor(
    private readonly maxLineBytes: () => number,
    private readonly onLine: (line: string, bytes: number) => void,
    private readonly onOversizedLine: (bytes: number) => void,
  ) {}

  /**
   * Takes the next `count` bytes, after the line being handled, as raw bytes
   * given whole to `done`, in the pieces they came in (call it from `onLine`;
   * the caller bounds `count`).
   */
  expectBytes(count: number, done: (parts: Buffer[]) => void): void {
    if (count === 0) done([]);
    else this.frame = { remaining: count, chunks: [], done };
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      if (this.frame) {
        start = this.takeFrame(chunk, start);
        continue;
      }
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      const piece = chunk.subarray(start, end);
      if (this.skipped !== undefined) {
        this.skipped += piece.length;
      } else if (this.buffered + piece.length > this.maxLineBytes()) {
        this.skipped = this.buffered + piece.length;
        this.chunks = [];
        this.buffered = 0;
      } else if (newline === -1) {
        this.chunks.push(piece);
        this.buffered += piece.length;
      }
      if (newline === -1) return;
      start = newline + 1;
      if (this.skipped !== undefined) {
        const size = this.skipped;
        this.skipped = undefined;
        this.onOversizedLine(size);
        continue;
      }
      const bytes = this.buffered + piece.length;
      const line =
        this.chunks.length === 0 ? piece.toString('utf8') : Buffer.concat([...this.chunks, piece]).toString('utf8');
      this.chunks = [];
      this.buffered = 0;
      this.onLine(line, bytes);
    }
  }

  /** Takes what `chunk` holds of the announced bytes from `start`; returns where the rest begins. */
  private takeFrame(chunk: Buffer, start: number): number {
    const frame = this.frame as Frame;
    const end = Math.min(chunk.length, start + frame.remaining);
    frame.chunks.push(chunk.subarray(start, end));
    frame.remaining -= end - start;
    if (frame.remaining === 0) {
      this.frame = undefined;
      frame.done(frame.chunks);
    }
    return end;
  }
}
