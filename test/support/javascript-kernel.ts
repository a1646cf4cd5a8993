/**
 * The JavaScript and TypeScript kernel, run as the supervisor runs it: a real node process in
 * its own process group, requests on fd 3 and events on fd 4 (pipes: named ones here), its
 * output on fds 1 and 2. SANDCELL_TEST_NODE picks another node (e.g. Debian's Node 18). The
 * harness of src/kernel/javascript-kernel*.test.ts, typescript-kernel.test.ts and
 * javascript-state.test.ts: each ends its kernels after every test (`afterEach(disposeKernels)`).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { kernelDirectory } from '../../src/kernel/index.js';

const KERNEL = path.join(kernelDirectory, 'sandcell_javascript_kernel.mjs');
const NODE = process.env.SANDCELL_TEST_NODE ?? process.execPath;

export type KernelEvent = { type: string; id?: string; [key: string]: unknown };
export interface ExecutionOutcome {
  events: KernelEvent[];
  result: string | undefined;
  displays: Array<Record<string, unknown>>;
  error: { name: string; value: string; traceback: string[] } | undefined;
  end: { status: string; executionCount: number; outputTruncated: boolean };
}

export class KernelUnderTest {
  stdout = '';
  stderr = '';
  readonly ready: Promise<KernelEvent>;
  private readonly waiting = new Map<string, (event: KernelEvent) => void>();
  private readonly collected = new Map<string, KernelEvent[]>();
  private nextId = 0;
  private readonly child: ChildProcess;
  private readonly requestFd: number;
  private readonly eventFd: number;
  private readonly directory: string;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;

  constructor(language: string, options: Record<string, unknown> = {}) {
    this.directory = mkdtempSync(path.join(tmpdir(), 'sandcell-js-kernel-'));
    const requests = path.join(this.directory, 'requests');
    const events = path.join(this.directory, 'events');
    execFileSync('mkfifo', [requests, events]);
    // Read-write opens of a FIFO do not wait for the other end.
    this.requestFd = openSync(requests, constants.O_RDWR);
    this.eventFd = openSync(events, constants.O_RDWR);
    this.child = spawn(NODE, [KERNEL, language], {
      detached: true,
      cwd: this.directory,
      env: { PATH: process.env.PATH, SANDCELL_KERNEL_OPTIONS: JSON.stringify(options) },
      stdio: ['ignore', 'pipe', 'pipe', this.requestFd, this.eventFd],
    });
    this.child.stdout?.on('data', (chunk) => {
      this.stdout += chunk;
    });
    this.child.stderr?.on('data', (chunk) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    let onReady: (event: KernelEvent) => void = () => {};
    this.ready = new Promise((resolve) => {
      onReady = resolve;
    });
    const reader = new net.Socket({ fd: this.eventFd, readable: true, writable: false });
    let pending = '';
    reader.setEncoding('utf8');
    reader.on('data', (chunk: string) => {
      pending += chunk;
      for (let newline = pending.indexOf('\n'); newline !== -1; newline = pending.indexOf('\n')) {
        const event = JSON.parse(pending.slice(0, newline)) as KernelEvent;
        pending = pending.slice(newline + 1);
        if (event.type === 'ready') onReady(event);
        else this.receive(event);
      }
    });
    this.reader = reader;
  }

  private readonly reader: net.Socket;

  private receive(event: KernelEvent): void {
    const id = String(event.id);
    const list = this.collected.get(id) ?? [];
    list.push(event);
    this.collected.set(id, list);
    if (event.type === 'execution-end' || event.type === 'reply') this.waiting.get(id)?.(event);
  }

  private send(request: Record<string, unknown>): Promise<KernelEvent> {
    const id = `request-${++this.nextId}`;
    const done = new Promise<KernelEvent>((resolve) => this.waiting.set(id, resolve));
    writeSync(this.requestFd, `${JSON.stringify({ ...request, id })}\n`);
    return done.then((event) => ({ ...event, all: this.collected.get(id) }));
  }

  async execute(code: string, fields: Record<string, unknown> = {}): Promise<ExecutionOutcome> {
    const end = (await this.send({ type: 'execute', code, ...fields })) as KernelEvent & { all: KernelEvent[] };
    const events = end.all;
    const result = events.find((event) => event.type === 'result');
    const error = events.find((event) => event.type === 'error');
    return {
      events,
      result: result ? String((result.data as Record<string, unknown>)['text/plain']) : undefined,
      displays: events
        .filter((event) => event.type === 'display')
        .map((event) => event.data as Record<string, unknown>),
      error: error as ExecutionOutcome['error'],
      end: end as unknown as ExecutionOutcome['end'],
    };
  }

  request(type: string, fields: Record<string, unknown> = {}): Promise<KernelEvent> {
    return this.send({ type, ...fields });
  }

  /** SIGINT to the kernel's process group, as the supervisor delivers an interrupt. */
  interrupt(): void {
    process.kill(-(this.child.pid as number), 'SIGINT');
  }

  async dispose(): Promise<void> {
    this.reader.destroy();
    try {
      process.kill(-(this.child.pid as number), 'SIGKILL');
    } catch {
      // Already gone.
    }
    await this.exited;
    closeSync(this.requestFd);
    rmSync(this.directory, { recursive: true, force: true });
  }
}

const kernels: KernelUnderTest[] = [];

/** A kernel, ended by disposeKernels; not yet ready. */
export function launchKernel(language = 'javascript', options: Record<string, unknown> = {}): KernelUnderTest {
  const kernel = new KernelUnderTest(language, options);
  kernels.push(kernel);
  return kernel;
}

export async function startKernel(
  language = 'javascript',
  options: Record<string, unknown> = {},
): Promise<KernelUnderTest> {
  const kernel = launchKernel(language, options);
  await kernel.ready;
  return kernel;
}

/** Ends every kernel started since the last call. */
export async function disposeKernels(): Promise<void> {
  await Promise.all(kernels.splice(0).map((kernel) => kernel.dispose()));
}

/** Runs a cell that must succeed. */
export async function succeed(target: KernelUnderTest, code: string): Promise<void> {
  expect((await target.execute(code)).error).toBeUndefined();
}
