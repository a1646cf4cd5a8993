/**
 * One real sandbox spoken to at the wire: the supervisor's protocol
 * (docs/kernel-protocol.md) as JSON lines, without the session layer, so the
 * supervisor's own behaviour can be tested on every backend.
 */
import { randomUUID } from 'node:crypto';
import { resolveLimits, type SandboxLimits } from '../../src/backends/limits.js';
import type { Sandbox, SandboxBackend, SandboxExit } from '../../src/backends/spec.js';
import { joinParts, LineSplitter } from '../../src/internal/line-splitter.js';

export type WireMessage = Record<string, unknown> & { type: string };

const DEFAULT_WAIT_MS = 30_000;

export class RawSandbox {
  /** Every message the sandbox sent, in order. */
  readonly messages: WireMessage[] = [];
  diagnostics = '';
  private waiters: { match: (message: WireMessage) => boolean; resolve: (message: WireMessage) => void }[] = [];
  private nextId = 1;

  /** `dispose` releases what the sandbox used once it has been killed (a backend's volume). */
  constructor(
    readonly sandbox: Sandbox,
    private readonly dispose: () => Promise<void>,
  ) {
    const splitter: LineSplitter = new LineSplitter(
      () => 512 * 1024 * 1024,
      (line) => {
        const message = JSON.parse(line) as WireMessage;
        // The supervisor's reply announcing raw bytes (a snapshot's chunk): they follow the line, as `data`.
        if (message.type === 'reply' && message.context === undefined && typeof message.bytes === 'number') {
          splitter.expectBytes(message.bytes, (parts) => this.receive({ ...message, data: joinParts(parts) }));
        } else {
          this.receive(message);
        }
      },
      () => undefined,
    );
    sandbox.output.on('data', (chunk: Buffer) => splitter.push(chunk));
    sandbox.diagnostics.on('data', (chunk: Buffer) => {
      this.diagnostics += chunk.toString('utf8');
    });
    sandbox.input.on('error', () => undefined);
  }

  static async open(
    backend: SandboxBackend,
    options: { kernelOptions?: Record<string, unknown>; limits?: Partial<SandboxLimits> } = {},
  ): Promise<RawSandbox> {
    const limits = resolveLimits(options.limits);
    const volume = await backend.createVolume({ sessionId: `raw-${randomUUID()}`, limits });
    try {
      const sandbox = await backend.start({
        volume,
        limits,
        kernelOptions: {
          outputBytes: 1 << 20,
          resultBytes: 32 << 20,
          fileTransferBytes: 64 << 20,
          ...options.kernelOptions,
        },
      });
      return new RawSandbox(sandbox, () => volume.dispose());
    } catch (error) {
      await volume.dispose();
      throw error;
    }
  }

  private receive(message: WireMessage): void {
    this.messages.push(message);
    const waiter = this.waiters.find((candidate) => candidate.match(message));
    if (waiter) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(message);
    }
  }

  /** Writes a line, and the raw bytes it announces (a state-write's frame). */
  send(message: Record<string, unknown>, frame?: Buffer): void {
    this.sandbox.input.write(`${JSON.stringify(message)}\n`);
    if (frame) this.sandbox.input.write(frame);
  }

  id(prefix = 'r'): string {
    return `${prefix}${this.nextId++}`;
  }

  /** The first message (already received or still to come) after index `from` that matches. */
  next(match: (message: WireMessage) => boolean, from = 0, waitMs = DEFAULT_WAIT_MS): Promise<WireMessage> {
    const seen = this.messages.slice(from).find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== done);
        reject(
          new Error(
            `no matching message within ${waitMs} ms; got ${JSON.stringify(this.messages.slice(from)).slice(-2000)}`,
          ),
        );
      }, waitMs);
      const done = (message: WireMessage) => {
        clearTimeout(timer);
        resolve(message);
      };
      this.waiters.push({ match, resolve: done });
    });
  }

  ready(): Promise<WireMessage> {
    return this.next((message) => message.type === 'ready');
  }

  /** Sends a request with a fresh id (and the frame its line announces) and waits for its reply. */
  async request(message: Record<string, unknown>, waitMs = DEFAULT_WAIT_MS, frame?: Buffer): Promise<WireMessage> {
    const id = this.id();
    const from = this.messages.length;
    this.send({ ...message, id }, frame);
    return this.next((reply) => reply.type === 'reply' && reply.id === id, from, waitMs);
  }

  /** Runs code in a context and returns every message of that execution, its end last. */
  async execute(code: string, context?: string): Promise<WireMessage[]> {
    const id = this.id('e');
    const from = this.messages.length;
    this.send({ type: 'execute', id, code, ...(context ? { context } : {}) });
    await this.next((message) => message.type === 'execution-end' && message.id === id, from);
    return this.messages.slice(from).filter((message) => message.id === id);
  }

  /** Starts a command; resolves with its messages once it has ended. */
  async command(command: string, options: Record<string, unknown> = {}): Promise<CommandRun> {
    const id = this.id('c');
    const from = this.messages.length;
    this.send({ type: 'command-start', id, command, ...options });
    const end = await this.next((message) => message.type === 'command-end' && message.id === id, from);
    return commandRun(
      this.messages.slice(from).filter((message) => message.id === id),
      end,
    );
  }

  async close(): Promise<SandboxExit> {
    try {
      return await this.sandbox.kill();
    } finally {
      await this.dispose();
    }
  }
}

export interface CommandRun {
  stdout: string;
  stderr: string;
  end: WireMessage;
  messages: WireMessage[];
}

export function commandRun(messages: WireMessage[], end: WireMessage): CommandRun {
  const text = (name: string) =>
    messages
      .filter((message) => message.type === 'command-output' && message.name === name)
      .map((message) => message.text)
      .join('');
  return { stdout: text('stdout'), stderr: text('stderr'), end, messages };
}
