/**
 * The session's sandbox over time: starting one (and checking it speaks this
 * host's protocol), replacing it, and what its end, or one kernel's end, means
 * for what ran in it — each run ends saying what was lost, each idle context's
 * next run says so, commands end with it. A sandbox sandcell ended on purpose
 * carries why (`retire`), which words those ends.
 */
import type {
  CheckpointAbout,
  Sandbox,
  SandboxBackend,
  SandboxCheckpoint,
  SandboxExit,
  SandboxIngress,
  SandboxMount,
  SandboxVolume,
  StartSandboxOptions,
} from '../backends/spec.js';
import { SandboxCrashedError, SandboxStartError, SandcellError, SessionClosedError } from '../errors.js';
import { KERNEL_PROTOCOL_VERSION } from '../kernel/index.js';
import type { SandboxNetwork } from '../network/gate-channel.js';
import type { CommandRegistry } from './commands.js';
import { KernelConnection } from './kernel-connection.js';
import type { ContextExitEvent, ReadyEvent } from './kernel-protocol.js';
import type { ResolvedSessionOptions } from './options.js';
import { messageLimits } from './output-limits.js';
import type { SessionContext } from './session-context.js';
import type { SessionContexts } from './session-contexts.js';
import type { SessionDeaths } from './session-deaths.js';
import {
  capitalize,
  describeContextExit,
  describeExit,
  EVERY_CONTEXT_LOST,
  SANDBOX_CONTENTS_ENDED,
  stateLostIn,
} from './state-loss.js';
import type { TerminalRegistry } from './terminals.js';

/** Why sandcell ended a sandbox, which decides what its end means for what ran in it. */
export type Retirement = { kind: 'restart' } | { kind: 'close' } | { kind: 'stuck'; context: string };

export interface SandboxHost {
  id: string;
  backend: SandboxBackend;
  volume: SandboxVolume;
  options: ResolvedSessionOptions;
  contexts: SessionContexts;
  commands: CommandRegistry;
  terminals: TerminalRegistry;
  deaths: SessionDeaths;
  /** The session's channel to its network gate, when it has internet access. */
  network?: SandboxNetwork;
  /** The session's ingress socket (its ports' way in), when the backend serves ports. */
  ingress?: SandboxIngress;
  /** Host directories its sandboxes bind in: its volumes. */
  mounts: SandboxMount[];
  /** How many connections to its ports are open now. */
  openPortConnections?: () => number;
  closed(): boolean;
}

export class SessionSandbox {
  private connection?: KernelConnection;
  private starting?: Promise<KernelConnection>;
  private readonly retired = new WeakMap<KernelConnection, Retirement>();
  /** Contexts whose stopped kernel is being replaced (a liveness check that finds it again waits for that). */
  private readonly replacingStopped = new WeakSet<SessionContext>();

  constructor(private readonly host: SandboxHost) {}

  /** The sandbox now, if one runs (or ran last). */
  get current(): KernelConnection | undefined {
    return this.connection;
  }

  /** The live sandbox, started if there is none. */
  ensure(): Promise<KernelConnection> {
    if (this.host.closed()) return Promise.reject(new SessionClosedError(this.host.id));
    if (this.connection?.alive && !this.starting) return Promise.resolve(this.connection);
    if (!this.starting) {
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  /** Ends the sandbox (and the one starting, if any) on purpose; `retirement` says why. */
  async end(retirement: Retirement): Promise<void> {
    const connection = this.connection;
    if (retirement.kind === 'close') await this.starting?.catch(() => undefined);
    for (const candidate of new Set([connection, this.connection])) {
      if (!candidate) continue;
      this.retired.set(candidate, retirement);
      await candidate.kill();
    }
  }

  /**
   * Code ignored its interrupt: restart its context's kernel; when the sandbox
   * does not do that in time, replace the whole sandbox.
   */
  async replaceStuckKernel(
    context: SessionContext,
    connection: KernelConnection,
  ): Promise<{ scope: 'context' } | { scope: 'sandbox'; why: string }> {
    try {
      await this.host.contexts.restartKernel(context, connection, this.host.options.contextRestartTimeoutMs);
      return { scope: 'context' };
    } catch (error) {
      if (connection.alive) {
        this.retired.set(connection, { kind: 'stuck', context: context.id });
        await connection.kill();
      }
      // Have a fresh sandbox ready for the next run.
      void this.ensure().catch(() => undefined);
      return { scope: 'sandbox', why: (error as Error).message };
    }
  }

  /** The backend's name, as snapshots record it. */
  get backendName(): string {
    return this.host.backend.name;
  }

  /**
   * Whether `connection`'s sandbox can be checkpointed whole, and restored by this session's backend:
   * not while it holds a connection to the host (this runsc fails to save one, and the sandbox with
   * it): a session with internet access (its gate's socket), or one with a port's connection open.
   */
  keepsCheckpoints(connection: KernelConnection): boolean {
    if (!connection.sandbox.checkpoint || !this.host.backend.restore) return false;
    if (this.host.network) return false;
    return (this.host.openPortConnections?.() ?? 0) === 0;
  }

  /**
   * Saves the whole sandbox into `directory` (Sandbox.checkpoint), which ends it; the caller has made
   * sure nothing runs in it. Undefined where the sandbox cannot (its backend keeps no checkpoints).
   */
  async checkpoint(connection: KernelConnection, directory: string): Promise<CheckpointAbout | undefined> {
    if (!connection.sandbox.checkpoint || !this.host.backend.restore) return undefined;
    this.retired.set(connection, { kind: 'restart' });
    try {
      return await connection.sandbox.checkpoint(directory);
    } catch (error) {
      // Not ended on purpose after all: where the failed checkpoint ended it, its end is a loss, said as one.
      this.retired.delete(connection);
      if (!connection.alive) {
        for (const context of this.host.contexts.all()) {
          if (context.connection === connection && !context.running)
            context.stateLossNote = `Between runs, a snapshot's checkpoint failed and ended the sandbox (${(error as Error).message}); a new sandbox replaced it, so ${stateLostIn(context.id)}`;
        }
      }
      throw error;
    }
  }

  /**
   * Replaces the sandbox with one restored from `checkpoint`, whose supervisor announced `ready` when it
   * first started; its contexts are the caller's to take up (SessionContexts.adopt).
   */
  async restore(checkpoint: SandboxCheckpoint, ready: ReadyEvent): Promise<KernelConnection> {
    const { backend } = this.host;
    if (!backend.restore) throw new SandboxStartError(`The ${backend.name} backend restores no checkpoints.`);
    await this.starting?.catch(() => undefined);
    await this.end({ kind: 'restart' });
    const restoring = (async () => {
      const sandbox = await (backend.restore as NonNullable<SandboxBackend['restore']>)(
        this.startOptions(),
        checkpoint,
      );
      return this.connect(sandbox, ready);
    })();
    this.starting = restoring.finally(() => {
      this.starting = undefined;
    });
    return restoring;
  }

  private startOptions(): StartSandboxOptions {
    const { volume, options } = this.host;
    return {
      volume,
      limits: options.limits,
      kernelOptions: {
        outputBytes: options.outputBytes,
        resultBytes: options.resultBytes,
        fileTransferBytes: options.fileTransferBytes,
        preloadModules: options.preloadModules,
        ...(options.warmImports?.length ? { warmImports: options.warmImports } : {}),
      },
      environment: options.environment,
      ...(this.host.network ? { network: this.host.network } : {}),
      ...(this.host.ingress ? { ingress: this.host.ingress } : {}),
      ...(this.host.mounts.length > 0 ? { mounts: this.host.mounts } : {}),
    };
  }

  private async start(): Promise<KernelConnection> {
    return this.connect(await this.host.backend.start(this.startOptions()));
  }

  /** The connection to a sandbox just started (or, with `restored`, restored), once its supervisor is ready. */
  private async connect(sandbox: Sandbox, restored?: ReadyEvent): Promise<KernelConnection> {
    const { options, deaths } = this.host;
    const connection = new KernelConnection(sandbox, {
      messageLimits: messageLimits(options),
      startTimeoutMs: options.startTimeoutMs,
      liveness: { quietMs: options.livenessCheckMs, answerMs: options.livenessTimeoutMs },
      ...(restored ? { restored } : {}),
    });
    try {
      const ready = await connection.ready;
      if (ready.protocolVersion !== KERNEL_PROTOCOL_VERSION) {
        throw new SandboxStartError(
          `The sandbox speaks protocol ${ready.protocolVersion}, this host ${KERNEL_PROTOCOL_VERSION}; reinstall sandcell (\`npm run setup\`).`,
        );
      }
    } catch (error) {
      await connection.kill();
      if (error instanceof SandcellError && error.code === 'sandbox-start-failed') throw error;
      const dataNote = connection.exit?.reason === 'out-of-memory' ? await deaths.dataShareNote(0) : '';
      throw new SandboxStartError(
        `The sandbox did not start: ${(error as Error).message}${dataNote ? ` ${capitalize(dataNote)}` : ''} Run \`sandcell doctor\` to check this machine.`,
        { cause: error },
      );
    }
    connection.onContextExit((event) => void this.contextExited(connection, event));
    connection.onContextStopped((context) => void this.contextStopped(connection, context));
    void connection.exited.then((exit) => this.ended(connection, exit));
    if (!restored) this.host.contexts.sandboxStarted(connection);
    this.connection = connection;
    return connection;
  }

  /** A context's kernel ended on its own: a run in it ends with its state lost, an idle one says so next time. */
  private async contextExited(connection: KernelConnection, event: ContextExitEvent): Promise<void> {
    const context = this.host.contexts.get(event.context);
    if (this.host.closed() || this.retired.has(connection) || !context?.liveIn(connection)) return;
    context.exited = true;
    const running = context.running;
    const idleNote = (description: string) =>
      `The kernel stopped between runs (${description}), so it was restarted and ${stateLostIn(context.id)}`;
    // Said at once, so a run that starts meanwhile reports it; the memory reading only sharpens it.
    if (!running) context.stateLossNote = idleNote(describeContextExit(event, false));
    const outOfMemory = await connection.outOfMemorySinceLastAsked();
    if (!running) {
      if (outOfMemory && context.stateLossNote) context.stateLossNote = idleNote(describeContextExit(event, true));
      return;
    }
    const cause = await this.host.deaths.kernelDeathCause(describeContextExit(event, outOfMemory), outOfMemory);
    running.lose({ name: 'KernelDied', reason: `${cause} The kernel was restarted: ${stateLostIn(context.id)}` });
    // Have a fresh kernel ready for the next run.
    if (!this.host.closed()) void this.host.contexts.ensureLive(context).catch(() => undefined);
  }

  /**
   * A liveness check found the kernel of a context with a run stopped (SIGSTOP): it can answer nothing until
   * something resumes it, which nothing will. It is replaced as a kernel that ignored its interrupt is, and
   * the run ends saying so.
   */
  private async contextStopped(connection: KernelConnection, contextId: string): Promise<void> {
    const context = this.host.contexts.get(contextId);
    const running = context?.running;
    if (!context || !running || this.host.closed() || this.retired.has(connection) || !context.liveIn(connection)) {
      return;
    }
    if (this.replacingStopped.has(context)) return;
    this.replacingStopped.add(context);
    try {
      const outcome = await this.replaceStuckKernel(context, connection);
      const what = 'Its kernel was stopped (SIGSTOP, or a debugger) and could not go on';
      running.lose({
        name: 'KernelDied',
        reason:
          outcome.scope === 'context'
            ? `${what}, so it was killed and restarted: ${stateLostIn(context.id)}`
            : `${what}, and it could not be restarted alone (${outcome.why}), so the whole sandbox was killed and restarted: ${EVERY_CONTEXT_LOST}`,
      });
    } finally {
      this.replacingStopped.delete(context);
    }
  }

  /** The sandbox ended: what ran in it ends, each context's next run says its state was lost. */
  private async ended(connection: KernelConnection, exit: SandboxExit): Promise<void> {
    const retirement = this.retired.get(connection);
    if (this.host.closed() || retirement?.kind === 'close') return;
    const affected = this.host.contexts.all().filter((context) => context.connection === connection);
    if (retirement?.kind === 'restart') {
      this.host.commands.sandboxEnded(connection);
      this.host.terminals.endAll("the session was restarted: a new sandbox replaced this terminal's", connection);
      for (const context of affected) {
        context.running?.lose({
          name: 'KernelRestarted',
          reason: `The session was restarted (session.restart()) while this ran: ${stateLostIn(context.id)}`,
        });
      }
      return;
    }
    const why =
      retirement?.kind === 'stuck'
        ? `code in context ${JSON.stringify(retirement.context)} did not stop when interrupted and its kernel could not be restarted alone, so the whole sandbox was killed`
        : connection.lostReason
          ? `the sandbox was lost (${connection.lostReason})`
          : `the sandbox ended (${describeExit(exit)})`;
    this.host.commands.sandboxEnded(connection, new SandboxCrashedError(`The command was killed: ${why}.`));
    this.host.terminals.endAll(why, connection);
    // Each context says it once: a run in it ends saying so, an idle one's next run does.
    for (const context of affected) {
      if (context.running) continue;
      context.stateLossNote =
        retirement?.kind === 'stuck'
          ? `Between runs, ${why} and restarted, so ${stateLostIn(context.id)}`
          : `Between runs, ${connection.lostReason ? `the sandbox was lost (${connection.lostReason})` : `the sandbox ended (${describeExit(exit)})`}, ${SANDBOX_CONTENTS_ENDED}; a new sandbox replaced it, so ${stateLostIn(context.id)}`;
    }
    const running = affected.filter((context) => context.running);
    if (running.length === 0) return;
    const cause =
      retirement?.kind === 'stuck'
        ? `The whole sandbox was killed and restarted: ${why}.`
        : await this.host.deaths.sandboxDeathCause(connection, exit);
    const lost = (context: SessionContext) => (affected.length > 1 ? EVERY_CONTEXT_LOST : stateLostIn(context.id));
    for (const context of running) {
      context.running?.lose({
        name: 'KernelDied',
        reason:
          retirement?.kind === 'stuck'
            ? `${cause} The kernel was restarted: ${stateLostIn(context.id)}`
            : `${cause} A new sandbox replaces it: ${lost(context)}`,
      });
    }
    // Have a fresh sandbox ready for the next run.
    if (!this.host.closed()) void this.ensure().catch(() => undefined);
  }
}
