/**
 * The sandbox protocol's supervisor (docs/kernel-protocol.md), in this
 * process: it routes requests by context to scripted kernels (the python one
 * from the start), creates, restarts and removes contexts, runs scripted
 * commands, and answers file requests from the volume's in-memory store.
 * Everything a kernel sends goes out with the context's id as its last key.
 */
import { ScriptedFileError, type ScriptedFileStore } from './file-store.js';
import type { CommandScript, ScriptedRun } from './script.js';
import { ScriptedCommand } from './scripted-command.js';
import { ScriptedKernel } from './scripted-kernel.js';

type Message = Record<string, unknown>;

export interface ScriptedSupervisorOptions {
  run: ScriptedRun;
  command: CommandScript;
  files: ScriptedFileStore;
  /** Language → version of the runtimes this sandbox has. */
  languages: Record<string, string | null>;
  nextKernelNumber: () => number;
  /** How long a new context's kernel takes to start. */
  kernelStartMs: number;
  /** Writes one line on the sandbox's channel. */
  send: (line: string | Message) => void;
  die: (exit: {
    code?: number | null;
    signal?: NodeJS.Signals | null;
    reason?: 'out-of-memory' | 'killed' | 'cpu-limit' | 'exited';
  }) => void;
  /** A kernel died for memory: the sandbox's OOM-kill counter counts it. */
  countOomKill: () => void;
}

const FILE_OPERATIONS: Record<string, (files: ScriptedFileStore, message: Message) => Message> = {
  'file-read': (files, message) => ({ data: files.read(String(message.path ?? '')).toString('base64') }),
  'file-write': (files, message) => {
    const data = Buffer.from(String(message.data ?? ''), 'base64');
    files.write(String(message.path ?? ''), data);
    return { size: data.length };
  },
  'file-list': (files, message) => ({
    entries: files.list(String(message.path ?? ''), { recursive: message.recursive === true }),
  }),
  'file-remove': (files, message) => {
    files.remove(String(message.path ?? ''));
    return {};
  },
};

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
  readonly contexts = new Map<string, { language: string; kernel: ScriptedKernel; exited?: boolean }>();
  /** Running commands, by id. */
  readonly commands = new Map<string, ScriptedCommand>();
  private nextPid = 100;

  constructor(private readonly options: ScriptedSupervisorOptions) {
    this.startKernel('python', 'python');
  }

  handle(message: Message): void {
    const kind = String(message.type);
    const file = FILE_OPERATIONS[kind];
    if (file) {
      this.reply(message, () => file(this.options.files, message));
      return;
    }
    const command = this.commands.get(String(message.id));
    switch (kind) {
      case 'execute':
      case 'interrupt':
      case 'reset':
      case 'ping':
      case 'is-complete':
      case 'complete':
      case 'inspect':
      case 'input-reply':
        this.toKernel(message);
        break;
      case 'context-create':
        // A kernel takes its time to start: the answer comes once it is ready.
        setTimeout(() => this.reply(message, () => this.createContext(message)), this.options.kernelStartMs);
        break;
      case 'context-restart':
        this.restartContext(message);
        break;
      case 'context-remove':
        this.reply(message, () => this.removeContext(String(message.context)));
        break;
      case 'command-start':
        this.startCommand(message);
        break;
      case 'command-stdin':
        command?.writeStdin(String(message.data ?? ''), message.eof === true);
        break;
      case 'command-signal':
        command?.signal(String(message.signal));
        break;
      case 'command-list':
        this.reply(message, () => ({ commands: [...this.commands.values()].map((running) => running.listing()) }));
        break;
      case 'shutdown':
        this.options.die({ code: 0, reason: 'exited' });
        break;
      default:
        this.reply(message, () => {
          throw new Refusal('unknown-request', `unknown request type ${kind}`);
        });
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

  private toKernel(message: Message): void {
    const id = message.context === undefined ? 'python' : String(message.context);
    const context = this.contexts.get(id);
    if (context && !context.exited) {
      context.kernel.handle(message);
      return;
    }
    if (message.type === 'interrupt') return;
    const error = context
      ? { code: 'context-exited', message: `the kernel of context ${id} has ended; restart it` }
      : { code: 'unknown-context', message: `no context ${id}` };
    if (message.type !== 'execute') {
      this.options.send({ type: 'reply', id: message.id, ok: false, error });
      return;
    }
    this.options.send({
      type: 'error',
      id: message.id,
      name: 'ContextError',
      value: error.message,
      traceback: [],
      context: id,
    });
    this.options.send({ type: 'execution-end', id: message.id, status: 'error', outputTruncated: false, context: id });
  }

  private createContext(message: Message): Message {
    const id = String(message.context);
    const language = String(message.language);
    if (this.contexts.has(id)) throw new Refusal('context-exists', `context ${id} exists`);
    if (!(language in this.options.languages)) throw new Refusal('language-unavailable', `no ${language} here`);
    this.startKernel(id, language);
    return { pid: this.nextPid++, language, version: this.options.languages[language] ?? null };
  }

  private restartContext(message: Message): void {
    const id = String(message.context);
    const context = this.contexts.get(id);
    // A stuck sandbox never answers.
    if (context?.kernel.stalled) return;
    this.reply(message, () => {
      if (!context) throw new Refusal('unknown-context', `no context ${id}`);
      context.kernel.stop();
      this.startKernel(id, context.language);
      return {
        pid: this.nextPid++,
        language: context.language,
        version: this.options.languages[context.language] ?? null,
      };
    });
  }

  private removeContext(id: string): Message {
    const context = this.contexts.get(id);
    if (!context) throw new Refusal('unknown-context', `no context ${id}`);
    context.kernel.stop();
    this.contexts.delete(id);
    return {};
  }

  private startKernel(id: string, language: string): void {
    const kernel: ScriptedKernel = new ScriptedKernel({
      contextId: id,
      language,
      run: this.options.run,
      files: this.options.files,
      kernelNumber: this.options.nextKernelNumber(),
      // The context goes last: a kernel cannot claim another's.
      send: (message) => this.options.send({ ...message, context: id }),
      sendRaw: this.options.send,
      die: this.options.die,
      exit: (exit) => this.endKernel(id, exit),
    });
    this.contexts.set(id, { language, kernel });
  }

  private startCommand(message: Message): void {
    const id = String(message.id);
    const command = new ScriptedCommand({
      id,
      pid: this.nextPid++,
      command: String(message.command ?? ''),
      ...(typeof message.cwd === 'string' ? { cwd: message.cwd } : {}),
      ...(typeof message.env === 'object' && message.env !== null
        ? { env: message.env as Record<string, string> }
        : {}),
      script: this.options.command,
      files: this.options.files,
      send: this.options.send,
      crashSandbox: () => this.options.die({ code: null, signal: 'SIGKILL', reason: 'exited' }),
      ended: () => this.commands.delete(id),
    });
    this.commands.set(id, command);
    void command.start();
  }

  private reply(message: Message, handler: () => Message): void {
    try {
      this.options.send({ ...handler(), type: 'reply', id: message.id, ok: true });
    } catch (error) {
      const code =
        error instanceof Refusal ? error.code : error instanceof ScriptedFileError ? error.reason : 'internal';
      this.options.send({
        type: 'reply',
        id: message.id,
        ok: false,
        error: { code, message: (error as Error).message },
      });
    }
  }
}
