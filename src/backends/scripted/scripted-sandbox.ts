/**
 * A sandbox with no processes: in-memory streams carrying the sandbox
 * protocol (newline-delimited JSON) to a scripted supervisor in this process,
 * the MCP SDK's in-memory transport in spirit. Tests end it from outside with
 * `die()`.
 */
import { PassThrough, Writable } from 'node:stream';
import { joinParts, LineSplitter } from '../../internal/line-splitter.js';
import type { ProtocolErrorMessage, ReadyEvent } from '../../session/kernel-messages.js';
import type { Sandbox, SandboxExit, SandboxUsage } from '../spec.js';
import type { ScriptedFileStore } from './file-store.js';
import type { CommandScript, ScriptedRun } from './script.js';
import { ScriptedSupervisor } from './scripted-supervisor.js';

export interface ScriptedSandboxOptions {
  run: ScriptedRun;
  command: CommandScript;
  files: ScriptedFileStore;
  languages: Record<string, string | null>;
  nextKernelNumber: () => number;
  kernelStartMs: number;
  /** Sent as the kernel's `ready` message; another value tests the host's version check. */
  protocolVersion: number;
  /** Whether the kernel says it is ready at all. */
  sendReady: boolean;
  /** What `usage()` reports as the CPU used (none: not measured). */
  cpuSeconds?: number;
}

export class ScriptedSandbox implements Sandbox {
  readonly input: Writable;
  private readonly splitter: LineSplitter;
  readonly output = new PassThrough();
  readonly diagnostics = new PassThrough();
  readonly exited: Promise<SandboxExit>;
  /** Every request line the host sent, parsed where it was JSON: what a test can assert on. */
  readonly requests: unknown[] = [];
  private exitWith: (exit: SandboxExit) => void = () => undefined;
  private exitInfo?: SandboxExit;
  /** The supervisor inside: a test can read its contexts and commands. */
  readonly supervisor: ScriptedSupervisor;
  private oomKillCount = 0;
  private readonly cpuSeconds?: number;

  constructor(options: ScriptedSandboxOptions) {
    this.cpuSeconds = options.cpuSeconds;
    this.exited = new Promise((resolve) => {
      this.exitWith = resolve;
    });
    this.supervisor = new ScriptedSupervisor({
      run: options.run,
      command: options.command,
      files: options.files,
      languages: options.languages,
      nextKernelNumber: options.nextKernelNumber,
      kernelStartMs: options.kernelStartMs,
      send: (message, frame) => this.send(message, frame),
      sendRaw: (line) => this.send(line),
      die: (exit) => this.die(exit),
      countOomKill: () => {
        this.oomKillCount += 1;
      },
    });
    // The host's lines, and the raw bytes a state-write's line announces after it.
    const splitter = new LineSplitter(
      () => Number.POSITIVE_INFINITY,
      (line) => this.receive(line),
      () => undefined,
    );
    this.splitter = splitter;
    this.input = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        // A dead sandbox swallows what is written to it, as a closed pipe would be ignored.
        if (!this.exitInfo) splitter.push(chunk);
        callback();
      },
    });
    if (options.sendReady) {
      setImmediate(() =>
        this.send({
          type: 'ready',
          protocolVersion: options.protocolVersion,
          pid: 1,
          python: options.languages.python ?? '3',
          languages: options.languages,
          // A context's state goes in the archive, never through a pipe (scripted-supervisor.ts).
          statePipes: false,
        } satisfies ReadyEvent),
      );
    }
  }

  /** The exit, once the sandbox has ended. */
  get exit(): SandboxExit | undefined {
    return this.exitInfo;
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  /** Ends the sandbox from outside, as a crash between runs would: the default is an exit with code 1. */
  die(exit: Partial<SandboxExit> = {}): void {
    if (this.exitInfo) return;
    this.exitInfo = {
      code: exit.code ?? (exit.signal ? null : 1),
      signal: exit.signal ?? null,
      reason: exit.reason ?? 'exited',
    };
    this.supervisor.stop();
    this.output.end();
    this.diagnostics.end();
    const info = this.exitInfo;
    // After what was already written has been read, as a real process's exit follows its last output.
    setImmediate(() => this.exitWith(info));
  }

  /**
   * Ends one context's kernel from outside, as a crash between runs would (the
   * supervisor reports `context-exit`); the default is a SIGKILL.
   */
  endContext(
    context: string,
    exit: { code?: number | null; signal?: string | null; outOfMemory?: boolean } = {},
  ): void {
    this.supervisor.endKernel(
      context,
      exit.code === undefined && exit.signal === undefined ? { ...exit, signal: 'SIGKILL' } : exit,
    );
  }

  /** Kernels killed for memory while the sandbox lived on (`kernel-exit` steps with `outOfMemory`). */
  async oomKills(): Promise<number> {
    return this.oomKillCount;
  }

  /** Only the CPU a test said this sandbox used: it has no processes to measure. */
  async usage(): Promise<SandboxUsage> {
    return this.cpuSeconds === undefined ? {} : { cpuSeconds: this.cpuSeconds };
  }

  async kill(): Promise<SandboxExit> {
    this.die({ code: null, signal: 'SIGKILL', reason: 'killed' });
    return this.exited;
  }

  /** Writes a line on the channel (a protocol message, or what a script forges), and the raw bytes it announces. */
  private send(line: string | object, frame?: Buffer): void {
    if (this.exitInfo) return;
    this.output.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
    if (frame && frame.length > 0) this.output.write(frame);
  }

  private receive(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.requests.push(line);
      this.send({ type: 'protocol-error', message: 'invalid JSON request' } satisfies ProtocolErrorMessage);
      return;
    }
    this.requests.push(message);
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.send({ type: 'protocol-error', message: 'invalid JSON request' } satisfies ProtocolErrorMessage);
      return;
    }
    const request = message as Record<string, unknown>;
    const { bytes } = request;
    // As the real supervisor reads it: a state-write's or file-write-chunk's line is followed by its bytes.
    const framed = request.type === 'state-write' || request.type === 'file-write-chunk';
    if (framed && typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes >= 0) {
      this.splitter.expectBytes(bytes, (parts) => this.supervisor.receive(request, joinParts(parts)));
      return;
    }
    this.supervisor.receive(request);
  }
}
