/**
 * session.commands: shell commands (`bash -c`) in the session's sandbox,
 * beside its kernels and with its limits, through the sandbox's own channel.
 * They run concurrently with everything; a non-zero exit is data; none
 * outlives its session.
 */
import { AbortError, InvalidInputError, TooManyCommandsError } from '../errors.js';
import {
  COMMAND_SIGNALS,
  type CommandHandle,
  type CommandInfo,
  type CommandOptions,
  type CommandResult,
  type CommandSignal,
} from './command.js';
import { CommandRun } from './command-run.js';
import type { KernelConnection } from './kernel-connection.js';
import { checkEnvironment, checkText, checkTimeout, checkWorkingDirectory } from './sandbox-inputs.js';

/** What commands need of their session. */
export interface CommandHost {
  /** The live sandbox, started if needed; rejects when the session is closed. */
  connection(): Promise<KernelConnection>;
  /** Throws when the session is closed. */
  checkOpen(): void;
  /** The session was used (for idle reaping). */
  touch(): void;
  maxCommands: number;
  maxCodeBytes: number;
  outputBytes: number;
  timeoutMs: number;
  answerTimeoutMs: number;
  requestTimeoutMs: number;
}

/** The running commands of one session: the session's side, which ends them with their sandbox. */
export class CommandRegistry {
  private readonly running = new Map<string, CommandRun>();
  /** Reserved while a command waits for its sandbox, so the bound holds for commands started at once. */
  private reserved = 0;
  private nextNumber = 1;

  constructor(readonly host: CommandHost) {}

  /** Whether a command someone waits for (not a background one) is running. */
  get foregroundRunning(): boolean {
    for (const run of this.running.values()) if (!run.background) return true;
    return false;
  }

  all(): CommandRun[] {
    return [...this.running.values()];
  }

  async start(command: unknown, options: CommandOptions): Promise<CommandRun> {
    const host = this.host;
    host.checkOpen();
    if (typeof options !== 'object' || options === null)
      throw new InvalidInputError('Command options must be an object.');
    const text = checkText('The command', command, host.maxCodeBytes);
    const cwd = checkWorkingDirectory(options.cwd);
    const env = checkEnvironment(options.env);
    const timeoutMs = checkTimeout(options.timeoutMs) ?? (options.background ? undefined : host.timeoutMs);
    if (options.stdin !== undefined) checkText('`stdin`', options.stdin, host.maxCodeBytes, { allowNul: true });
    if (options.signal?.aborted) throw new AbortError('The command was aborted before it started.');
    if (this.running.size + this.reserved >= host.maxCommands) throw new TooManyCommandsError(host.maxCommands);
    this.reserved += 1;
    let connection: KernelConnection;
    try {
      connection = await host.connection();
    } finally {
      this.reserved -= 1;
    }
    if (options.signal?.aborted) throw new AbortError('The command was aborted before it started.');
    const id = `command-${this.nextNumber++}`;
    const settings = {
      command: text,
      ...(cwd === undefined ? {} : { cwd }),
      ...(env === undefined ? {} : { env }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      outputBytes: host.outputBytes,
      answerTimeoutMs: host.answerTimeoutMs,
    };
    const run = new CommandRun(id, connection, settings, options, (ended) => {
      this.running.delete(ended.id);
      host.touch();
    });
    this.running.set(id, run);
    host.touch();
    run.start();
    return run;
  }

  byPid(pid: number): CommandRun | undefined {
    for (const run of this.running.values()) if (run.pid === pid) return run;
    return undefined;
  }

  /** The sandbox of `connection` ended: its commands end as killed, or fail with `error`. */
  sandboxEnded(connection: KernelConnection, error?: Error): void {
    for (const run of this.all()) if (run.connection === connection) run.sandboxEnded(error);
  }

  /** Kills every running command and waits until each has ended. */
  async killAll(): Promise<void> {
    const runs = this.all();
    for (const run of runs) run.signal('SIGKILL');
    await Promise.all(runs.map((run) => run.result.catch(() => undefined)));
  }
}

/** `session.commands`. */
export class SessionCommands {
  constructor(private readonly registry: CommandRegistry) {}

  /**
   * Runs `command` with `bash -c` in the sandbox. Resolves with its result
   * once it has ended, or with `background: true` with a handle once it has
   * started. A non-zero exit, a timeout or a kill is in the result.
   */
  run(command: string, options: CommandOptions & { background: true }): Promise<CommandHandle>;
  run(command: string, options?: CommandOptions & { background?: false }): Promise<CommandResult>;
  async run(command: string, options: CommandOptions = {}): Promise<CommandHandle | CommandResult> {
    const run = await this.registry.start(command, options);
    if (!run.background) return run.result;
    const pid = await run.started;
    const maxBytes = this.registry.host.maxCodeBytes;
    return {
      id: run.id,
      pid,
      wait: () => run.result,
      kill: async (signal: CommandSignal = 'SIGKILL') => run.signal(checkSignal(signal)),
      sendStdin: (text: string) => run.sendStdin(checkText('Text for stdin', text, maxBytes, { allowNul: true })),
      closeStdin: () => run.closeStdin(),
    };
  }

  /** The commands running in the sandbox now. */
  async list(): Promise<CommandInfo[]> {
    const host = this.registry.host;
    host.checkOpen();
    const connection = await host.connection();
    const reply = await connection.request({ type: 'command-list' }, host.requestTimeoutMs);
    return reply.commands.map(({ id, pid, command, cwd, startedMs }) => ({ id, pid, command, cwd, startedMs }));
  }

  /** Kills the command whose process id is `pid` (SIGKILL to its process group) and waits for its end; false when no command of this session has that pid. */
  async kill(pid: number): Promise<boolean> {
    this.registry.host.checkOpen();
    if (!Number.isInteger(pid)) throw new InvalidInputError('`pid` must be an integer.');
    const run = this.registry.byPid(pid);
    if (!run?.signal('SIGKILL')) return false;
    await run.result.catch(() => undefined);
    return true;
  }
}

function checkSignal(signal: unknown): CommandSignal {
  if (COMMAND_SIGNALS.includes(signal as CommandSignal)) return signal as CommandSignal;
  throw new InvalidInputError(`A command can be sent ${COMMAND_SIGNALS.join(', ')}; got ${JSON.stringify(signal)}.`);
}
