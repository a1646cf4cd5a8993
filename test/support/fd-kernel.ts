/**
 * An fd 3/4 kernel (docs/kernel-protocol.md) started on the host as the
 * supervisor starts it: its own session and process group, fd 0 /dev/null,
 * fds 1 and 2 pipes, requests on fd 3 and events on fd 4. Fds 3 and 4 are
 * real pipes (FIFOs), as the supervisor's are: node's own 'pipe' stdio gives
 * sockets, which R cannot open through /dev/fd.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface KernelEvent {
  type: string;
  id?: string;
  [key: string]: unknown;
}

export interface KernelRun {
  /** Events of this execution, in order: result, display, error, execution-end. */
  events: KernelEvent[];
  end: KernelEvent;
  error: KernelEvent | undefined;
  stdout: string;
  stderr: string;
}

/** The environment every sandbox has (src/backends/sandbox-environment.ts), with a home of the test's own. */
export function sandboxLikeEnvironment(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    TMPDIR: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'dumb',
    ...extra,
  };
}

/** Whether a process is gone: no such pid, or a zombie waiting to be reaped (it runs nothing). */
export function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

export class FdKernel {
  readonly events: KernelEvent[] = [];
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly waiters: { test: (event: KernelEvent) => boolean; resolve: (event: KernelEvent) => void }[] = [];
  private buffer = '';
  private nextId = 0;
  /** Where each execution's output starts in `stdout` and `stderr`. */
  private readonly outputStarts = new Map<string, { stdout: number; stderr: number }>();

  private constructor(
    readonly child: ChildProcess,
    private readonly requests: net.Socket,
    events: net.Socket,
    private readonly directory: string,
  ) {
    events.setEncoding('utf8');
    events.on('data', (chunk: string) => this.receive(chunk));
    child.stdout?.setEncoding('utf8').on('data', (text: string) => this.stdout.push(text));
    child.stderr?.setEncoding('utf8').on('data', (text: string) => this.stderr.push(text));
    requests.on('error', () => {}); // a kernel that died closes its end; the test sees it through `exited`
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  static start(argv: string[], options: { env: Record<string, string>; cwd: string }): FdKernel {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-fd-kernel-'));
    const requestsPath = path.join(directory, 'requests');
    const eventsPath = path.join(directory, 'events');
    execFileSync('mkfifo', [requestsPath, eventsPath]);
    // Opening a FIFO blocks until its other end is open: a non-blocking reader
    // first lets the writer open, then the kernel's blocking reader replaces it.
    const placeholder = openSync(requestsPath, constants.O_RDONLY | constants.O_NONBLOCK);
    const requestsWrite = openSync(requestsPath, constants.O_WRONLY);
    const requestsRead = openSync(requestsPath, constants.O_RDONLY);
    closeSync(placeholder);
    const eventsRead = openSync(eventsPath, constants.O_RDONLY | constants.O_NONBLOCK);
    const eventsWrite = openSync(eventsPath, constants.O_WRONLY);
    const [command = '', ...args] = argv;
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true, // setsid: the kernel's pid is its process group, as under the supervisor
      stdio: ['ignore', 'pipe', 'pipe', requestsRead, eventsWrite],
    });
    closeSync(requestsRead);
    closeSync(eventsWrite);
    const requests = new net.Socket({ fd: requestsWrite, readable: false, writable: true });
    const events = new net.Socket({ fd: eventsRead, readable: true, writable: false });
    return new FdKernel(child, requests, events, directory);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    for (let end = this.buffer.indexOf('\n'); end >= 0; end = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 1);
      const event = JSON.parse(line) as KernelEvent;
      this.events.push(event);
      for (const waiter of [...this.waiters]) {
        if (waiter.test(event)) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(event);
        }
      }
    }
  }

  /** The first event (already received or still to come) that passes `test`. */
  waitFor(test: (event: KernelEvent) => boolean, timeoutMs = 30_000): Promise<KernelEvent> {
    const seen = this.events.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such kernel event within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        test,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      });
    });
  }

  /** Waits until the kernel's stdout holds `text`. */
  async waitForStdout(text: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.stdout.join('').includes(text)) {
      if (Date.now() > deadline)
        throw new Error(`the kernel did not print ${JSON.stringify(text)} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  ready(timeoutMs = 30_000): Promise<KernelEvent> {
    return this.waitFor((event) => event.type === 'ready', timeoutMs);
  }

  /** Writes a request; the promise settles once it is in the pipe (as the supervisor's are before it signals). */
  send(request: Record<string, unknown>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.requests.write(`${JSON.stringify(request)}\n`, (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Sends a request answered by a `reply` and waits for it. */
  request(type: string, fields: Record<string, unknown> = {}): Promise<KernelEvent> {
    const id = `request-${this.nextId++}`;
    this.send({ type, id, ...fields }).catch(() => {});
    return this.waitFor((event) => event.type === 'reply' && event.id === id);
  }

  /** Starts an execution; `finish` collects it. */
  start(code: string): string {
    const id = `execution-${this.nextId++}`;
    this.outputStarts.set(id, { stdout: this.stdout.length, stderr: this.stderr.length });
    this.send({ type: 'execute', id, code }).catch(() => {});
    return id;
  }

  /** Starts an execution and resolves once its request is in the kernel's pipe. */
  async startWritten(code: string): Promise<string> {
    const id = `execution-${this.nextId++}`;
    this.outputStarts.set(id, { stdout: this.stdout.length, stderr: this.stderr.length });
    await this.send({ type: 'execute', id, code });
    return id;
  }

  async finish(id: string, timeoutMs = 30_000): Promise<KernelRun> {
    const outputStart = this.outputStarts.get(id) ?? { stdout: 0, stderr: 0 };
    const end = await this.waitFor((event) => event.type === 'execution-end' && event.id === id, timeoutMs);
    // The kernel wrote its output before the event; let the pipes' reads land.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const events = this.events.filter((event) => event.id === id);
    return {
      events,
      end,
      error: events.find((event) => event.type === 'error'),
      stdout: this.stdout.slice(outputStart.stdout).join(''),
      stderr: this.stderr.slice(outputStart.stderr).join(''),
    };
  }

  /** Runs code to its end; its output is what arrived in the meantime, so run one at a time. */
  execute(code: string, timeoutMs = 30_000): Promise<KernelRun> {
    return this.finish(this.start(code), timeoutMs);
  }

  /** SIGINT to the kernel's process group, as the supervisor interrupts an fd 3/4 kernel. */
  interrupt(): void {
    process.kill(-this.pid, 'SIGINT');
  }

  /**
   * Interrupts `run` as the supervisor does: SIGINT now, and again every 300 ms, three times at
   * most, while the run has not ended (a signal can land while a kernel is between states).
   */
  async interruptUntilEnded<T>(run: Promise<T>): Promise<T> {
    let ended = false;
    const watched = run.finally(() => {
      ended = true;
    });
    this.interrupt();
    for (let repeat = 0; repeat < 3 && !ended; repeat++) {
      await Promise.race([watched, new Promise((resolve) => setTimeout(resolve, 300))]);
      if (!ended) this.interrupt();
    }
    return watched;
  }

  /** Closes the kernel's requests: it should exit by itself. */
  closeRequests(): void {
    this.requests.end();
  }

  /** Closes the requests, then ends whatever is left of its group. */
  async close(): Promise<void> {
    this.closeRequests();
    const timer = setTimeout(() => this.killGroup(), 5_000);
    await this.exited;
    clearTimeout(timer);
    this.killGroup();
    rmSync(this.directory, { recursive: true, force: true });
  }

  killGroup(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // the group is already empty
    }
  }
}
