/**
 * A session template (zygote) per root filesystem: one warm Python, past the
 * imports every session makes, that forks each new session
 * (src/kernel/sandcell_zygote.py says how a fork isolates itself). This is
 * the host's side: it starts the template as root through bwrap, asks it for
 * sessions over its stdin, and takes each session's channel and diagnostics
 * as two connections to a unix socket of its own (Node cannot pass pipes to
 * another process, so the session dials in, naming itself by a random token).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { SandboxStartError } from '../../errors.js';
import { LineSplitter } from '../../internal/line-splitter.js';
import { SANDBOX_OOM_SCORE_ADJ } from '../../internal/oom-score.js';
import { sweepDeadOwnersEntries } from '../../internal/process-alive.js';
import { INGRESS_SOCKET_MOUNT } from '../../network/ingress.js';
import { GATE_SOCKET_MOUNT } from '../../network/sandbox-proxy.js';
import { KERNEL_MOUNT } from '../sandbox-environment.js';
import type { SandboxMount } from '../spec.js';
import { HOST_ETC_FILES } from './arguments.js';
import type { RuntimeLayout } from './host-setup.js';

/**
 * How long a template with no session left may wait for the next: a server keeps its template while it
 * starts sessions, and one whose environment was rebuilt (or whose traffic stopped) lets it go.
 */
const IDLE_TEMPLATE_MS = 10 * 60_000;
/** How long a template may take to import what it warms (the first one after boot reads it all from disk). */
const BOOT_TIMEOUT_MS = 120_000;
/** How long a fork may take to dial in and report, past which the start fails. */
const FORK_TIMEOUT_MS = 20_000;
/** How long a connection to the socket may take to name itself before it is dropped. */
const HELLO_TIMEOUT_MS = 5_000;
/** A token (32 hex digits) and the connection's kind: `c`, the channel, or `d`, diagnostics. */
const HELLO_BYTES = 33;
/** The template's events are short; anything longer is not one of them. */
const EVENT_LINE_BYTES = 64 * 1024;
/** An argument the template ignores, whose bytes a forked process's command line is written over. */
const TITLE_ROOM = '--room-for-the-command-lines-of-forked-sessions';
/** What is kept of the template's stderr, for the error that says why it died. */
const STDERR_BYTES = 8192;

export interface ZygoteOptions {
  bwrapPath: string;
  /** The root filesystem sessions take /usr and /etc from: `/` for the host. */
  systemRoot: string;
  runtime: RuntimeLayout;
  seccompFilter: string;
  /** The template's environment (a session's, for the default limits): what its imports read. */
  environment: Record<string, string>;
  /** Modules imported before any session is forked. */
  warmModules: string[];
}

/** What a fork needs to become one session (the same inputs as bwrap's arguments). */
export interface ForkRequest {
  uid: number;
  gid: number;
  /** cgroup.procs files the session joins before anything of it runs. */
  cgroupProcs: string[];
  dataDirectory: string;
  tmpBytes: number;
  gateSocket?: string;
  ingressSocket?: string;
  /** Host directories bound in (volumes), after the session's files. */
  mounts?: SandboxMount[];
  environment: Record<string, string>;
  /** Read-only copies in the session: path inside → host file. */
  files: Record<string, string>;
  /** Read-only copies made per session: path inside → content. */
  contents?: Record<string, Buffer>;
}

export interface SessionExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A forked session as the host holds it. */
export interface ForkedSession {
  pid: number;
  /** CPU the fork's helper used (reaped by the template, so in no process of the session). */
  startCpuSeconds: number;
  channel: net.Socket;
  diagnostics: net.Socket;
  /** The exit of the session's PID 1, when the template saw it (not when the template died first). */
  exited: Promise<SessionExit | undefined>;
  /** SIGKILLs the session's PID 1, which takes its whole PID namespace with it. */
  kill(): void;
  /**
   * The host no longer waits for the template's report of this session's end (its channel closed and the
   * report was late): the template's pipes stop being held for it, so a stuck template keeps no process alive.
   */
  forget(): void;
}

interface PendingFork {
  channel?: net.Socket;
  diagnostics?: net.Socket;
  pid?: number;
  cpuSeconds?: number;
  resolve: (session: ForkedSession) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class Zygote {
  private readonly pending = new Map<string, PendingFork>();
  /** Sessions started and not yet seen to end: token → the end's settle. */
  private readonly running = new Map<string, (exit: SessionExit | undefined) => void>();
  private readonly events: LineSplitter;
  private stderr = '';
  private ready?: { resolve: () => void; reject: (error: Error) => void };
  private dead = false;
  private idleTimer?: NodeJS.Timeout;

  private constructor(
    private readonly child: ChildProcess,
    private readonly server: net.Server,
    private readonly socketPath: string,
    private readonly options: ZygoteOptions,
  ) {
    this.events = new LineSplitter(
      () => EVENT_LINE_BYTES,
      (line) => this.onEvent(line),
      () => undefined,
    );
    child.stdout?.on('data', (chunk: Buffer) => this.events.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_BYTES);
    });
    child.stdin?.on('error', () => undefined);
    child.once('close', (code, signal) => this.onDeath(code, signal));
    server.on('connection', (socket) => this.onConnection(socket));
  }

  /** Starts a template and waits until it has warmed its modules. */
  static async start(options: ZygoteOptions): Promise<Zygote> {
    const socketPath = path.join(options.runtime.root, `zygote-${process.pid}-${randomBytes(4).toString('hex')}.sock`);
    const server = net.createServer({ allowHalfOpen: false });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    // Only root may dial in: a session dials before it drops to its uid.
    await chmod(socketPath, 0o600);
    const child = spawn(options.bwrapPath, templateArguments(options), {
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: '/',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      // Its own process group: a terminal's Ctrl-C is for sandcell, not the template (--die-with-parent ties it to us).
      detached: true,
    });
    // A template keeps nothing alive by itself: sandcell exits when its sessions are done. While a session is
    // starting or running, though, the template's reports about it (`started`, `exited`) are awaited: its
    // pipes are held then (holdWhileNeeded), or a process whose last handle was a session's closed channel
    // would end in the middle of that wait (Node's exit 13, issue 44).
    server.unref();
    const zygote = new Zygote(child, server, socketPath, options);
    zygote.holdWhileNeeded();
    await zygote.boot();
    return zygote;
  }

  private async boot(): Promise<void> {
    const booted = new Promise<void>((resolve, reject) => {
      this.ready = { resolve, reject };
    });
    const timer = setTimeout(
      () => this.ready?.reject(new SandboxStartError(`The session template took over ${BOOT_TIMEOUT_MS} ms to start.`)),
      BOOT_TIMEOUT_MS,
    );
    this.child.stdin?.write(
      `${JSON.stringify({ environment: this.options.environment, preload: this.options.warmModules, hostPid: process.pid })}\n`,
    );
    try {
      await booted;
      this.idleIfUnused();
    } catch (error) {
      this.close();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** Keeps the event loop alive through the template's pipes exactly while a session of it starts or runs. */
  private holdWhileNeeded(): void {
    const needed = !this.dead && (this.running.size > 0 || this.pending.size > 0);
    const handles = [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as Array<{
      ref?: () => void;
      unref?: () => void;
    } | null>;
    for (const handle of handles) (needed ? handle?.ref : handle?.unref)?.call(handle);
  }

  /** Forks a session; it is isolated and its supervisor running when this resolves. */
  fork(request: ForkRequest): Promise<ForkedSession> {
    if (this.dead) return Promise.reject(new SandboxStartError('The session template has ended.'));
    clearTimeout(this.idleTimer);
    const token = randomBytes(16).toString('hex');
    const contents = Object.fromEntries(
      Object.entries(request.contents ?? {}).map(([target, content]) => [target, content.toString('base64')]),
    );
    const message = {
      type: 'start',
      token,
      uid: request.uid,
      gid: request.gid,
      cgroupProcs: request.cgroupProcs,
      oomScoreAdj: SANDBOX_OOM_SCORE_ADJ,
      files: request.files,
      contents,
      seccompFilter: this.options.seccompFilter,
      socket: this.socketPath,
      systemRoot: this.options.systemRoot,
      etcFiles: HOST_ETC_FILES,
      tmpBytes: request.tmpBytes,
      dataDirectory: request.dataDirectory,
      gateSocket: request.gateSocket,
      gateSocketMount: GATE_SOCKET_MOUNT,
      ingressSocket: request.ingressSocket,
      ingressSocketMount: INGRESS_SOCKET_MOUNT,
      mounts: request.mounts ?? [],
      environment: request.environment,
    };
    return new Promise<ForkedSession>((resolve, reject) => {
      const timer = setTimeout(
        () => this.failFork(token, new SandboxStartError(`A forked session took over ${FORK_TIMEOUT_MS} ms to start.`)),
        FORK_TIMEOUT_MS,
      );
      this.pending.set(token, { resolve, reject, timer });
      this.holdWhileNeeded();
      this.child.stdin?.write(`${JSON.stringify(message)}\n`);
    });
  }

  /** Ends the template (its sessions go on; each ends with its channel). */
  close(): void {
    if (!this.dead && this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    this.server.close();
    rm(this.socketPath, { force: true }).catch(() => undefined);
  }

  private onConnection(socket: net.Socket): void {
    const timer = setTimeout(() => socket.destroy(), HELLO_TIMEOUT_MS);
    socket.on('error', () => undefined);
    const onReadable = () => {
      const hello = socket.read(HELLO_BYTES) as Buffer | null;
      if (hello === null) return;
      socket.off('readable', onReadable);
      clearTimeout(timer);
      const token = hello.subarray(0, 32).toString('latin1');
      const kind = hello.subarray(32).toString('latin1');
      const pending = this.pending.get(token);
      if (!pending || (kind !== 'c' && kind !== 'd') || pending[kind === 'c' ? 'channel' : 'diagnostics']) {
        socket.destroy();
        return;
      }
      if (kind === 'c') pending.channel = socket;
      else pending.diagnostics = socket;
      this.settleIfWhole(token);
    };
    socket.on('readable', onReadable);
  }

  private onEvent(line: string): void {
    let event: {
      type?: unknown;
      token?: unknown;
      pid?: unknown;
      cpuSeconds?: unknown;
      message?: unknown;
      code?: unknown;
      signal?: unknown;
    };
    try {
      event = JSON.parse(line);
    } catch {
      return;
    }
    const token = typeof event.token === 'string' ? event.token : '';
    switch (event.type) {
      case 'ready':
        this.ready?.resolve();
        return;
      case 'started': {
        const pending = this.pending.get(token);
        if (pending && typeof event.pid === 'number') {
          pending.pid = event.pid;
          pending.cpuSeconds = typeof event.cpuSeconds === 'number' ? event.cpuSeconds : 0;
          this.settleIfWhole(token);
        }
        return;
      }
      case 'failed':
        this.failFork(token, new SandboxStartError(`A forked session could not start: ${String(event.message)}`));
        return;
      case 'exited': {
        const exit = {
          code: typeof event.code === 'number' ? event.code : null,
          signal: typeof event.signal === 'string' ? (event.signal as NodeJS.Signals) : null,
        };
        const settle = this.running.get(token);
        if (settle) {
          this.running.delete(token);
          settle(exit);
          this.holdWhileNeeded();
          this.idleIfUnused();
        } else {
          // Ended before its start was whole: the start fails, with what the session said.
          const pending = this.pending.get(token);
          const said = pending?.diagnostics?.read() as Buffer | null | undefined;
          this.failFork(
            token,
            new SandboxStartError(
              `A forked session ended as it started (${exit.signal ?? `exit ${exit.code}`})${said ? `: ${said.toString('utf8').trim()}` : ''}.`,
            ),
          );
        }
        return;
      }
    }
  }

  private settleIfWhole(token: string): void {
    const pending = this.pending.get(token);
    if (!pending || pending.pid === undefined || !pending.channel || !pending.diagnostics) return;
    this.pending.delete(token);
    clearTimeout(pending.timer);
    const pid = pending.pid;
    const exited = new Promise<SessionExit | undefined>((resolve) => this.running.set(token, resolve));
    this.holdWhileNeeded();
    pending.resolve({
      pid,
      startCpuSeconds: pending.cpuSeconds ?? 0,
      channel: pending.channel,
      diagnostics: pending.diagnostics,
      exited,
      kill: () => {
        if (!this.dead && this.running.has(token))
          this.child.stdin?.write(`${JSON.stringify({ type: 'kill', token })}\n`);
      },
      forget: () => {
        const settle = this.running.get(token);
        if (!settle) return;
        this.running.delete(token);
        settle(undefined);
        this.holdWhileNeeded();
        this.idleIfUnused();
      },
    });
  }

  private failFork(token: string, error: Error): void {
    const pending = this.pending.get(token);
    if (!pending) return;
    this.pending.delete(token);
    clearTimeout(pending.timer);
    pending.channel?.destroy();
    pending.diagnostics?.destroy();
    if (pending.pid !== undefined) this.child.stdin?.write(`${JSON.stringify({ type: 'kill', token })}\n`);
    pending.reject(error);
    this.holdWhileNeeded();
    this.idleIfUnused();
  }

  /** With no session started or starting, the template ends after IDLE_TEMPLATE_MS unless one is asked for. */
  private idleIfUnused(): void {
    if (this.dead || this.running.size > 0 || this.pending.size > 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.close(), IDLE_TEMPLATE_MS);
    this.idleTimer.unref();
  }

  private onDeath(code: number | null, signal: NodeJS.Signals | null): void {
    this.dead = true;
    clearTimeout(this.idleTimer);
    const detail = this.stderr.trim();
    const error = new SandboxStartError(
      `The session template ended (${signal ?? `exit ${code}`})${detail ? `: ${detail.slice(-2000)}` : ''}.`,
    );
    this.ready?.reject(error);
    for (const token of [...this.pending.keys()]) this.failFork(token, error);
    // Its sessions live on, no longer its children: their ends are seen only as their channels close.
    for (const settle of this.running.values()) settle(undefined);
    this.running.clear();
    this.holdWhileNeeded();
    this.close();
  }
}

/**
 * bwrap's arguments for the template: root in the host's namespaces but its
 * own mount namespace (the host's filesystem with the root's /usr and /etc
 * files, an empty /tmp, the kernel files at /opt/sandcell) and no network.
 * Not a PID namespace of its own: its death must not take the sessions.
 */
export function templateArguments(options: Pick<ZygoteOptions, 'systemRoot' | 'runtime'>): string[] {
  const args = ['--dev-bind', '/', '/', '--tmpfs', '/tmp', '--tmpfs', path.dirname(KERNEL_MOUNT)];
  args.push('--ro-bind', options.runtime.kernelDirectory, KERNEL_MOUNT);
  // Another root's whole /etc too (its loader's cache, its Python's configuration): the template's own view.
  // Sessions bind theirs from the host's paths (sandcell_zygote.py), whatever this view holds.
  if (options.systemRoot !== '/') {
    for (const directory of ['usr', 'etc'])
      args.push('--ro-bind', path.join(options.systemRoot, directory), `/${directory}`);
  }
  args.push('--unshare-ipc', '--unshare-uts', '--unshare-net', '--cap-add', 'ALL', '--die-with-parent', '--');
  // The last argument is room: each forked process writes its own command line over the template's.
  args.push('/usr/bin/python3', '-I', '-B', `${KERNEL_MOUNT}/sandcell_zygote.py`, TITLE_ROOM);
  return args;
}

/** Whether a command line (its arguments) is a session template's: the one templateArguments runs. */
export function isSessionTemplate(argv: readonly string[]): boolean {
  return argv.includes(`${KERNEL_MOUNT}/sandcell_zygote.py`) && argv.includes(TITLE_ROOM);
}

/** Removes the sockets of templates whose sandcell process is no longer alive. */
export async function sweepStaleTemplateSockets(runtimeRoot: string): Promise<void> {
  await sweepDeadOwnersEntries(runtimeRoot, /^zygote-(\d+)-[0-9a-f]+\.sock$/, (entry) => rm(entry, { force: true }));
}
