/**
 * The sandbox protocol's supervisor (docs/kernel-protocol.md), in this
 * process: it routes requests by context to scripted kernels (the python one
 * from the start), creates, restarts and removes contexts, runs scripted
 * commands, and answers file requests from the volume's in-memory store.
 * Everything a kernel sends goes out with the context's id as its last key.
 *
 * It takes the host's lines as the protocol's own HostMessage and writes only
 * SupervisorMessage (src/session/kernel-messages.ts), so it cannot drift from
 * what the real supervisor (src/kernel/sandcell_routes.py) says.
 */
import {
  type ContextBoundMessage,
  type FileRequest,
  FRAME_MAX_BYTES,
  type HostMessage,
  type KernelMessage,
  type KernelRequest,
  type ReplyMessage,
  type ReplyMessageBodies,
  type StartedKernel,
  type SupervisorMessage,
} from '../../session/kernel-messages.js';
import { ScriptedFileError, type ScriptedFileStore } from './file-store.js';
import type { CommandScript, ScriptedRun } from './script.js';
import { ScriptedCommand } from './scripted-command.js';
import { ScriptedKernel } from './scripted-kernel.js';
import { ScriptedStateArchive, StateRefusal } from './scripted-state.js';

export interface ScriptedSupervisorOptions {
  run: ScriptedRun;
  command: CommandScript;
  files: ScriptedFileStore;
  /** Language → version of the runtimes this sandbox has. */
  languages: Record<string, string | null>;
  nextKernelNumber: () => number;
  /** How long a new context's kernel takes to start. */
  kernelStartMs: number;
  /** Writes one protocol message on the sandbox's channel, and the raw bytes its line announces. */
  send: (message: SupervisorMessage, frame?: Buffer) => void;
  /** Writes whatever a script forges on the sandbox's channel (a line, or an object). */
  sendRaw: (line: string | Record<string, unknown>) => void;
  die: (exit: {
    code?: number | null;
    signal?: NodeJS.Signals | null;
    reason?: 'out-of-memory' | 'killed' | 'cpu-limit' | 'exited';
  }) => void;
  /** A kernel died for memory: the sandbox's OOM-kill counter counts it. */
  countOomKill: () => void;
}

/** Every type of line a host writes: a line of another type is refused, as the real supervisor refuses it. */
const HOST_MESSAGE_TYPES: Record<HostMessage['type'], true> = {
  execute: true,
  'input-reply': true,
  interrupt: true,
  reset: true,
  ping: true,
  'is-complete': true,
  complete: true,
  inspect: true,
  'file-read': true,
  'file-chunk': true,
  'file-write': true,
  'file-write-chunk': true,
  'file-list': true,
  'file-remove': true,
  'context-create': true,
  'context-restart': true,
  'context-remove': true,
  'command-start': true,
  'command-stdin': true,
  'command-signal': true,
  'terminal-open': true,
  'terminal-input': true,
  'terminal-resize': true,
  'terminal-ack': true,
  'terminal-signal': true,
  'terminal-close': true,
  'command-list': true,
  liveness: true,
  'port-connect': true,
  'port-list': true,
  'state-begin': true,
  'state-read': true,
  'state-write': true,
  'state-end': true,
  'state-pipe': true,
  'state-save': true,
  'state-load': true,
  shutdown: true,
};

const SIGNALS: ReadonlySet<string> = new Set(['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGHUP', 'SIGQUIT']);

/** A context or command id, as the supervisor checks it. */
const ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

const DATA_DIR = '/mnt/data';

/** A request refused with the protocol's error code. */
class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class ScriptedSupervisor {
  /** The contexts' kernels, by context id. */
  readonly contexts = new Map<string, { language: string; cwd: string; kernel: ScriptedKernel; exited?: boolean }>();
  /** Running commands, by id. */
  readonly commands = new Map<string, ScriptedCommand>();
  private nextPid = 100;
  private readonly archive: ScriptedStateArchive;

  constructor(private readonly options: ScriptedSupervisorOptions) {
    this.archive = new ScriptedStateArchive(options.files);
    this.startKernel('python', 'python', DATA_DIR);
  }

  /** One JSON object the host wrote (and the frame its line announced): a message of the protocol, or refused as unknown. */
  receive(message: Record<string, unknown>, frame?: Buffer): void {
    const { type } = message;
    if (typeof type === 'string' && Object.hasOwn(HOST_MESSAGE_TYPES, type)) {
      this.handle(message as HostMessage, frame);
      return;
    }
    const error = { code: 'unknown-request', message: `unknown request type ${JSON.stringify(type ?? null)}` };
    const { id } = message;
    if (typeof id === 'string' || typeof id === 'number') {
      this.options.send({ type: 'reply', id: String(id), ok: false, error });
    } else {
      this.options.send({ type: 'log', message: error.message });
    }
  }

  handle(message: HostMessage, frame: Buffer = Buffer.alloc(0)): void {
    switch (message.type) {
      case 'file-read':
      case 'file-chunk':
      case 'file-write':
      case 'file-list':
      case 'file-remove':
        this.fileRequest(message);
        break;
      case 'file-write-chunk':
        this.reply(message, () => {
          if (!isCount(message.offset) || message.bytes !== frame.length || frame.length > FRAME_MAX_BYTES) {
            throw new Refusal(
              'invalid-request',
              `file-write-chunk: offset must be an integer >= 0, and bytes the length of the frame after the line, at most ${FRAME_MAX_BYTES}`,
            );
          }
          return { size: this.options.files.writeChunk(message.path, message.offset, frame) };
        });
        break;
      case 'execute':
      case 'interrupt':
      case 'reset':
      case 'ping':
      case 'is-complete':
      case 'complete':
      case 'inspect':
      case 'input-reply':
      case 'state-save':
      case 'state-load':
        this.toKernel(message);
        break;
      case 'state-begin':
        this.reply(message, () => this.archive.begin(message));
        break;
      case 'state-read':
        this.replyWithFrame(message, () => this.archive.read(message.offset));
        break;
      case 'state-write':
        this.reply(message, () => this.archive.write(frame, message.eof === true));
        break;
      case 'state-end':
        this.reply(message, () => this.archive.end());
        break;
      case 'state-pipe':
        // It says no `statePipes` when ready: a host never asks, and one that does is refused.
        this.reply(message, () => {
          throw new StateRefusal('invalid-request', 'state-pipe: the scripted sandbox streams no state');
        });
        break;
      case 'context-create':
        // A kernel takes its time to start: the answer comes once it is ready.
        setTimeout(() => this.reply(message, () => this.createContext(message)), this.options.kernelStartMs);
        break;
      case 'context-restart':
        this.restartContext(message);
        break;
      case 'context-remove':
        this.reply(message, () => this.removeContext(message.context));
        break;
      case 'command-start':
        this.startCommand(message);
        break;
      case 'command-stdin':
        this.commands.get(message.id)?.writeStdin(message.data, message.eof === true);
        break;
      case 'command-signal':
        if (!SIGNALS.has(message.signal)) {
          this.refuse(message.id, new Refusal('invalid-request', `signal must be one of ${[...SIGNALS].join(', ')}`));
          break;
        }
        this.commands.get(message.id)?.signal(message.signal);
        break;
      case 'command-list':
        this.reply(message, () => ({ commands: [...this.commands.values()].map((running) => running.listing()) }));
        break;
      case 'liveness':
        // A scripted kernel is never stopped: it runs in this process.
        this.reply(message, () => ({ stopped: [] }));
        break;
      // A scripted sandbox is given no ingress socket (the backend does not serve ports), as a supervisor without one answers.
      case 'port-connect':
        this.refuse(message.id, new Refusal('ingress-unavailable', 'this sandbox has no ingress socket'));
        break;
      case 'port-list':
        this.reply(message, () => ({ ports: [] }));
        break;
      // A scripted sandbox runs no programs: it has no pseudo-terminal to give.
      case 'terminal-open':
        this.options.send({
          type: 'terminal-end',
          id: message.id,
          exitCode: null,
          signal: null,
          error: { code: 'terminals-unavailable', message: 'a scripted sandbox has no terminals' },
        });
        break;
      case 'terminal-input':
      case 'terminal-resize':
      case 'terminal-ack':
      case 'terminal-signal':
      case 'terminal-close':
        break;
      case 'shutdown':
        this.options.die({ code: 0, reason: 'exited' });
        break;
    }
  }

  /** Ends a context's kernel from outside, as a crash would; false when there is no such context. */
  endKernel(id: string, exit: { code?: number | null; signal?: string | null; outOfMemory?: boolean }): boolean {
    const context = this.contexts.get(id);
    if (!context) return false;
    context.kernel.stop();
    context.exited = true;
    if (exit.outOfMemory) this.options.countOomKill();
    this.options.send({ type: 'context-exit', context: id, code: exit.code ?? null, signal: exit.signal ?? null });
    return true;
  }

  /** The sandbox ended: every kernel and command stops. */
  stop(): void {
    for (const { kernel } of this.contexts.values()) kernel.stop();
    for (const command of this.commands.values()) command.stop();
  }

  private fileRequest(request: FileRequest & { id: string }): void {
    const { files } = this.options;
    switch (request.type) {
      case 'file-read':
        this.reply(request, () => ({ data: files.read(request.path).toString('base64') }));
        return;
      case 'file-chunk':
        this.replyWithFrame(request, () => {
          const { offset, bytes } = request;
          if (!isCount(offset) || !isCount(bytes) || bytes > FRAME_MAX_BYTES) {
            throw new Refusal(
              'invalid-request',
              `file-chunk: offset must be an integer >= 0, bytes an integer from 0 to ${FRAME_MAX_BYTES}`,
            );
          }
          const { data, size, modifiedNs } = files.readChunk(request.path, offset, bytes);
          return { body: { bytes: data.length, size, modifiedNs, eof: offset + data.length >= size }, frame: data };
        });
        return;
      case 'file-write':
        this.reply(request, () => {
          const data = Buffer.from(request.data, 'base64');
          files.write(request.path, data);
          return { size: data.length };
        });
        return;
      case 'file-list':
        this.reply(request, () => ({ entries: files.list(request.path, { recursive: request.recursive === true }) }));
        return;
      case 'file-remove':
        this.reply(request, () => {
          files.remove(request.path);
          return {};
        });
        return;
    }
  }

  private toKernel(message: ContextBoundMessage): void {
    const id = message.context ?? 'python';
    const context = this.contexts.get(id);
    if (context && !context.exited) {
      context.kernel.handle(message);
      return;
    }
    if (message.type === 'interrupt') return;
    const error = context
      ? new Refusal('context-exited', `the kernel of context ${id} has ended; restart it (context-restart)`)
      : new Refusal('unknown-context', `there is no context ${id} in this session`);
    if (message.type !== 'execute') {
      this.refuse(message.id, error);
      return;
    }
    // An execution is answered by its events, so the host never waits on it.
    const { send } = this.options;
    send({ type: 'error', id: message.id, name: 'ContextError', value: error.message, traceback: [], context: id });
    send({
      type: 'execution-end',
      id: message.id,
      status: 'error',
      executionCount: null,
      outputTruncated: false,
      context: id,
    });
  }

  private createContext(request: Extract<KernelRequest, { type: 'context-create' }>): StartedKernel {
    const id = request.context;
    if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
      throw new Refusal('invalid-request', `a context id is 1-64 characters of A-Z a-z 0-9 _ . - (got ${id})`);
    }
    if (this.contexts.has(id)) throw new Refusal('context-exists', `a context ${id} exists already`);
    const { language } = request;
    if (!Object.hasOwn(this.options.languages, language)) {
      throw new Refusal('language-unavailable', `the language ${language} is not available in this sandbox`);
    }
    const cwd = resolveCwd(request.cwd);
    this.startKernel(id, language, cwd);
    return { pid: this.nextPid++, language, version: this.options.languages[language] ?? null };
  }

  private restartContext(request: Extract<KernelRequest, { type: 'context-restart' }> & { id: string }): void {
    const id = request.context;
    const context = this.contexts.get(id);
    // A stuck sandbox never answers.
    if (context?.kernel.stalled) return;
    this.reply(request, () => {
      if (!context) throw new Refusal('unknown-context', `there is no context ${id} in this session`);
      context.kernel.stop();
      this.startKernel(id, context.language, context.cwd);
      return {
        pid: this.nextPid++,
        language: context.language,
        version: this.options.languages[context.language] ?? null,
      };
    });
  }

  private removeContext(id: string): ReplyMessageBodies['context-remove'] {
    const context = this.contexts.get(id);
    if (!context) throw new Refusal('unknown-context', `there is no context ${id} in this session`);
    context.kernel.stop();
    this.contexts.delete(id);
    return {};
  }

  private startKernel(id: string, language: string, cwd: string): void {
    const kernel: ScriptedKernel = new ScriptedKernel({
      contextId: id,
      language,
      cwd,
      run: this.options.run,
      files: this.options.files,
      stateFiles: this.archive.stateFiles,
      kernelNumber: this.options.nextKernelNumber(),
      // The context goes last: a kernel cannot claim another's.
      send: (message: KernelMessage) => this.options.send({ ...message, context: id }),
      forge: (message) => this.options.sendRaw({ ...message, context: id }),
      sendRaw: this.options.sendRaw,
      die: this.options.die,
      exit: (exit) => this.endKernel(id, exit),
    });
    this.contexts.set(id, { language, cwd, kernel });
  }

  private startCommand(message: Extract<HostMessage, { type: 'command-start' }>): void {
    const { id } = message;
    const refused = (error: Refusal) =>
      this.options.send({
        type: 'command-end',
        id,
        exitCode: null,
        signal: null,
        outputTruncated: false,
        error: { code: error.code, message: error.message },
      });
    if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
      refused(new Refusal('invalid-request', `a command id is 1-64 characters of A-Z a-z 0-9 _ . - (got ${id})`));
      return;
    }
    if (this.commands.has(id)) {
      this.options.send({ type: 'log', message: `command-start: a command ${id} is running already; ignored` });
      return;
    }
    if (typeof message.command !== 'string' || message.command.includes('\0')) {
      refused(new Refusal('invalid-request', 'command must be a string without NUL bytes'));
      return;
    }
    const command = new ScriptedCommand({
      id,
      pid: this.nextPid++,
      command: message.command,
      ...(message.cwd === undefined ? {} : { cwd: message.cwd }),
      ...(message.env === undefined ? {} : { env: message.env }),
      script: this.options.command,
      files: this.options.files,
      send: this.options.send,
      crashSandbox: () => this.options.die({ code: null, signal: 'SIGKILL', reason: 'exited' }),
      ended: () => this.commands.delete(id),
    });
    this.commands.set(id, command);
    void command.start();
  }

  /** Answers `request` with what `body` returns, or with the error it throws. */
  private reply<Type extends KernelRequest['type']>(
    request: { type: Type; id: string },
    body: () => ReplyMessageBodies[Type],
  ): void {
    let answer: ReplyMessage;
    try {
      const fields: ReplyMessageBodies[KernelRequest['type']] = body();
      answer = { type: 'reply', id: request.id, ok: true, ...fields };
    } catch (error) {
      this.refuse(request.id, error);
      return;
    }
    this.options.send(answer);
  }

  /** A reply whose line announces raw bytes, and those bytes after it. */
  private replyWithFrame<Type extends 'state-read' | 'file-chunk'>(
    request: { type: Type; id: string },
    answer: () => { body: ReplyMessageBodies[Type]; frame: Buffer },
  ): void {
    let made: ReturnType<typeof answer>;
    try {
      made = answer();
    } catch (error) {
      this.refuse(request.id, error);
      return;
    }
    this.options.send({ type: 'reply', id: request.id, ok: true, ...made.body }, made.frame);
  }

  private refuse(id: string, error: unknown): void {
    const code =
      error instanceof Refusal || error instanceof StateRefusal
        ? error.code
        : error instanceof ScriptedFileError
          ? error.reason
          : 'internal';
    this.options.send({ type: 'reply', id, ok: false, error: { code, message: (error as Error).message } });
  }
}

/** An offset or a byte count, as the supervisor takes them: an integer, not negative. */
function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** The working directory a context or command asks for: /mnt/data by default, a relative one under it. */
function resolveCwd(cwd: string | undefined): string {
  if (cwd === undefined || cwd === '') return DATA_DIR;
  if (typeof cwd !== 'string' || cwd.includes('\0'))
    throw new Refusal('invalid-request', 'cwd must be a path without NUL bytes');
  return cwd.startsWith('/') ? cwd : `${DATA_DIR}/${cwd}`;
}
