/**
 * One running kernel container as a Sandbox: its attached stream split into
 * the kernel's output and diagnostics, its exit (and why), its usage and OOM
 * kills, and its removal.
 */

import { type Duplex, PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import type { Sandbox, SandboxExit, SandboxUsage } from '../spec.js';
import { oomKillsOfProcess } from './container-oom.js';
import { ignoreMissing } from './engine-errors.js';

export class DockerSandbox implements Sandbox {
  readonly exited: Promise<SandboxExit>;
  readonly output = new PassThrough();
  readonly diagnostics = new PassThrough();
  private killedByUs = false;
  private removing?: Promise<void>;
  /** The container's first process as this machine sees it, once asked for. */
  private initPid?: number;
  private resolveExit?: (exit: SandboxExit) => void;

  constructor(
    private readonly docker: Dockerode,
    private readonly container: Dockerode.Container,
    private readonly stream: Duplex,
  ) {
    this.docker.modem.demuxStream(stream, this.output, this.diagnostics);
    const endStreams = () => {
      this.output.end();
      this.diagnostics.end();
    };
    stream.once('end', endStreams);
    stream.once('close', endStreams);
    // A reset socket is an ended sandbox; `exited` reports it.
    stream.on('error', endStreams);
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
  }

  get input() {
    return this.stream;
  }

  /** Called once the container has started: the wait answers when it is no longer running. */
  watch(): void {
    void this.waitForExit().then((exit) => this.resolveExit?.(exit));
  }

  private async waitForExit(): Promise<SandboxExit> {
    let code: number | null = null;
    try {
      const result = (await this.container.wait()) as { StatusCode?: number };
      code = result.StatusCode ?? null;
    } catch {
      // Removed underneath us (kill): the code is unknown.
    }
    let outOfMemory = false;
    if (!this.killedByUs) {
      const state = await this.container.inspect().then(
        (info) => info.State,
        () => undefined,
      );
      outOfMemory = state?.OOMKilled === true;
    }
    await this.remove();
    this.stream.destroy();
    return { code, signal: null, reason: exitReason(code, outOfMemory, this.killedByUs) };
  }

  private remove(): Promise<void> {
    this.removing ??= this.container.remove({ force: true }).catch(ignoreMissing);
    return this.removing;
  }

  async kill(): Promise<SandboxExit> {
    this.killedByUs = true;
    await this.remove();
    return this.exited;
  }

  /**
   * OOM kills in the container, counted in its memory cgroup (a local
   * engine); elsewhere the engine's flag, which says only whether the
   * container's own process was killed for memory.
   */
  async oomKills(): Promise<number> {
    this.initPid ??= await this.container.inspect().then(
      (info) => info.State?.Pid || undefined,
      () => undefined,
    );
    const counted = this.initPid === undefined ? undefined : await oomKillsOfProcess(this.initPid);
    if (counted !== undefined) return counted;
    const state = await this.container.inspect().then(
      (info) => info.State,
      () => undefined,
    );
    return state?.OOMKilled === true ? 1 : 0;
  }

  async usage(): Promise<SandboxUsage> {
    const [stats, top] = await Promise.all([
      this.container.stats({ stream: false }).catch(() => undefined),
      this.container.top({ ps_args: '-o pid' }).catch(() => undefined),
    ]);
    const rows = (top as { Processes?: string[][] } | undefined)?.Processes ?? [];
    const processIds = rows.map((row) => Number(row[0])).filter((pid) => Number.isInteger(pid));
    // The container's cgroup counts every process it ever ran, in nanoseconds.
    const cpuNanoseconds = stats?.cpu_stats?.cpu_usage?.total_usage;
    return {
      memoryBytes: stats?.memory_stats?.usage,
      processIds,
      cpuSeconds: typeof cpuNanoseconds === 'number' ? cpuNanoseconds / 1e9 : undefined,
    };
  }
}

function exitReason(code: number | null, outOfMemory: boolean, killedByUs: boolean): SandboxExit['reason'] {
  if (outOfMemory) return 'out-of-memory';
  if (killedByUs) return 'killed';
  // The engine reports a first process killed by a signal as 128 + signal: SIGXCPU is the CPU-time limit.
  if (code === 128 + 24) return 'cpu-limit';
  if (code === 128 + 9) return 'killed';
  return 'exited';
}
