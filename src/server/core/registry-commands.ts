/**
 * The server's one path for shell commands in a managed session. Every front
 * door that runs a command (/v1 commands, Azure's shellCommand, MCP's
 * run_command, a conversation agent's run_shell_command) comes through here,
 * so each gets the same admission (shutdown, size, the key's rate), the same
 * cap on its time, the same metrics, and a graceful shutdown waits for the
 * commands someone waits for as it waits for executions.
 */
import type { CommandHandle, CommandOptions, CommandResult } from '../../session/command.js';
import { LimitExceededError } from './errors.js';
import type { ManagedSession } from './managed-session.js';
import type { Metrics } from './metrics.js';

/** A command's options as a front door gives them: the session's, less `background` (two methods say it). */
export interface ManagedCommandOptions extends Omit<CommandOptions, 'background'> {
  /** The command already passed `admit()` (a stream checks first, so a refusal answers the request). */
  admitted?: boolean;
}

/** What the commands need of the registry. */
export interface RegistryCommandsHost {
  metrics: Metrics;
  limits: { maxCodeBytes: number; defaultTimeoutMs: number; maxExecutionMs: number };
  /** Refuses new work during shutdown and past the key's rate (commands share the executions' bucket). */
  admitWork(entry: ManagedSession): void;
  /** Runs `work` counted as running work, so a graceful shutdown waits for it. */
  track<T>(work: () => Promise<T>): Promise<T>;
}

export class RegistryCommands {
  /** Commands running now through the server, by whether someone waits for them. */
  readonly running = { foreground: 0, background: 0 };

  constructor(private readonly host: RegistryCommandsHost) {}

  /** Checks a command against the limits: shutdown, its size, and the key's rate. The session caps how many run. */
  admit(entry: ManagedSession, command: string): void {
    const size = Buffer.byteLength(command, 'utf8');
    if (size > this.host.limits.maxCodeBytes) {
      this.host.metrics.rejected.inc({ reason: 'code-too-large' });
      throw new LimitExceededError(
        'code-bytes',
        `The command is ${size} bytes; the limit is ${this.host.limits.maxCodeBytes}.`,
      );
    }
    this.host.admitWork(entry);
  }

  /** Runs a command and resolves with its result once it has ended (a non-zero exit is data). */
  run(entry: ManagedSession, command: string, options: ManagedCommandOptions = {}): Promise<CommandResult> {
    const { admitted, timeoutMs: requested, ...rest } = options;
    if (!admitted) this.admit(entry, command);
    const timeoutMs = this.timeout(requested, false);
    return this.host.track(async () => {
      this.running.foreground++;
      try {
        const result = await entry.session.commands.run(command, {
          ...rest,
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
        });
        this.record(result, 'foreground');
        return result;
      } finally {
        this.running.foreground--;
      }
    });
  }

  /**
   * Starts a command in the background and resolves with its handle once it has started. The
   * session keeps the handle until the command ends, so its stdin can be written by pid.
   */
  async start(entry: ManagedSession, command: string, options: ManagedCommandOptions = {}): Promise<CommandHandle> {
    const { admitted, timeoutMs: requested, ...rest } = options;
    if (!admitted) this.admit(entry, command);
    const timeoutMs = this.timeout(requested, true);
    const handle = await entry.session.commands.run(command, {
      ...rest,
      background: true,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
    this.running.background++;
    entry.backgroundCommands.set(handle.pid, handle);
    void handle
      .wait()
      .then(
        (result) => this.record(result, 'background'),
        () => undefined, // its session closed under it: nothing ran to its end
      )
      .finally(() => {
        this.running.background--;
        entry.backgroundCommands.delete(handle.pid);
      });
    return handle;
  }

  /**
   * A command's time limit: the one asked for, within the server's maximum; a command waited for
   * without one gets the default; a background one without one runs until killed or its session ends.
   */
  private timeout(timeoutMs: number | undefined, background: boolean): number | undefined {
    if (timeoutMs === undefined && background) return undefined;
    return Math.min(timeoutMs ?? this.host.limits.defaultTimeoutMs, this.host.limits.maxExecutionMs);
  }

  private record(result: CommandResult, kind: 'foreground' | 'background'): void {
    const status = result.timedOut ? 'timeout' : result.exitCode === 0 ? 'ok' : 'error';
    this.host.metrics.commands.inc({ kind, status });
    this.host.metrics.commandDuration.observe(result.durationMs / 1000, { kind });
  }
}
