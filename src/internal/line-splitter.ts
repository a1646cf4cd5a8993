/** Splits a byte stream into newline-terminated lines, refusing lines over a size bound. */

export class LineTooLongError extends Error {}

export class LineSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: (line: string) => void,
  ) {}

  /** Feeds bytes; calls onLine for each complete line. Throws LineTooLongError past the bound. */
  push(chunk: Buffer): void {
    let start = 0;
    let newline = chunk.indexOf(0x0a, start);
    while (newline !== -1) {
      const piece = chunk.subarray(start, newline);
      if (this.buffered + piece.length > this.maxLineBytes) throw this.tooLong();
      const line =
        this.chunks.length === 0 ? piece.toString('utf8') : Buffer.concat([...this.chunks, piece]).toString('utf8');
      this.chunks = [];
      this.buffered = 0;
      this.onLine(line);
      start = newline + 1;
      newline = chunk.indexOf(0x0a, start);
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.buffered += rest.length;
      if (this.buffered > this.maxLineBytes) throw this.tooLong();
      this.chunks.push(rest);
    }
  }

  private tooLong(): LineTooLongError {
    this.chunks = [];
    this.buffered = 0;
    return new LineTooLongError(`a message exceeded ${this.maxLineBytes} bytes`);
  }
}
