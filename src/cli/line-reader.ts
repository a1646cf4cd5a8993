/**
 * Lines from stdin, one at a time, for prompts. Lines that arrive before they
 * are asked for (piped input) wait in a queue instead of being lost.
 */
import readline from 'node:readline';

export class LineReader {
  readonly interface: readline.Interface;
  private readonly lines: AsyncIterator<string>;
  private ended = false;

  constructor(input: NodeJS.ReadableStream = process.stdin, output: NodeJS.WritableStream = process.stdout) {
    this.interface = readline.createInterface({
      input,
      output,
      terminal: (input as NodeJS.ReadStream).isTTY === true,
    });
    this.lines = this.interface[Symbol.asyncIterator]();
  }

  /** Shows `prompt` and reads a line; undefined at the end of input. */
  async question(prompt: string): Promise<string | undefined> {
    if (this.ended) return undefined;
    this.interface.setPrompt(prompt);
    this.interface.prompt();
    const next = await this.lines.next();
    if (next.done) {
      this.ended = true;
      return undefined;
    }
    return next.value;
  }

  close(): void {
    this.ended = true;
    this.interface.close();
  }
}
