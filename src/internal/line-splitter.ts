/**
 * Splits a byte stream into newline-terminated lines within a size bound. A
 * line over the bound is skipped as it streams past, never buffered, and
 * reported by its size when it ends: a sender flooding oversized lines costs
 * scanning time, not memory.
 */

export class LineSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes of the oversized line being skipped, or undefined when none is. */
  private skipped?: number;

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

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
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
}
