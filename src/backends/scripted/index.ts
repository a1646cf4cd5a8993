/**
 * The scripted backend: backend spec v1 with no sandbox at all. Each sandbox
 * is a supervisor object in this process that speaks the real sandbox
 * protocol over in-memory streams: its contexts' kernels answer runs from a
 * script, its commands do what a command script says. So tests of sandcell's
 * own logic (queueing, timeouts, restarts, contexts, commands, caps, pools,
 * servers) run in milliseconds on any machine, and a kernel can hang, die or
 * break the protocol on cue. It isolates nothing: it is for tests only.
 */
import { BackendUnavailableError } from '../../errors.js';
import { KERNEL_PROTOCOL_VERSION } from '../../kernel/index.js';
import type { CreateVolumeOptions, SandboxBackend, SandboxVolume, StartSandboxOptions } from '../spec.js';
import { ScriptedFileStore } from './file-store.js';
import { type CommandScript, type ExecuteScript, type ScriptedRun, scriptRunner } from './script.js';
import { ScriptedSandbox } from './scripted-sandbox.js';

export interface ScriptedBackendOptions {
  /** What each run does, in every context. @default every run succeeds with no output */
  execute?: ExecuteScript;
  /** What each command does. @default every command ends with status 0 and no output */
  command?: CommandScript;
  /**
   * The languages the sandboxes have (language → version), which contexts can be created in.
   * @default python, javascript, typescript, bash and r
   */
  languages?: Record<string, string | null>;
  /** How long a new context's kernel takes to start (its `context-create` is answered then). @default 0 */
  kernelStartMs?: number;
  /**
   * Called as each sandbox starts (`attempt` counts from 1); throwing makes
   * that start fail, as on a broken host. @default every start succeeds
   */
  onStart?: (context: { attempt: number; options: StartSandboxOptions }) => void | Promise<void>;
  /**
   * The CPU-seconds each sandbox says it has used (`usage().cpuSeconds`), from what it was started
   * with: a test's stand-in for what a start costs. @default not measured
   */
  cpuSeconds?: (options: StartSandboxOptions) => number;
  /** When set, `ensureAvailable()` rejects with a BackendUnavailableError saying this. @default available */
  unavailableReason?: string;
  /** The protocol version the kernels announce. @default this sandcell's */
  protocolVersion?: number;
  /** False: kernels never say they are ready (a start that times out). @default true */
  sendReady?: boolean;
}

const DEFAULT_LANGUAGES: Record<string, string> = {
  python: '3.11.2',
  javascript: '18',
  typescript: '18',
  bash: '5.2',
  r: '4.2',
};

export class ScriptedVolume implements SandboxVolume {
  readonly files = new ScriptedFileStore();
  disposed = false;

  constructor(readonly sessionId: string) {}

  async dispose(): Promise<void> {
    this.disposed = true;
  }
}

export class ScriptedBackend implements SandboxBackend {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'scripted';
  /** Every sandbox started, in order: a test can crash one (`die()`) or read what the host sent it. */
  readonly sandboxes: ScriptedSandbox[] = [];
  /** Every volume created, in order. */
  readonly volumes: ScriptedVolume[] = [];
  private readonly run: ScriptedRun;
  private startAttempts = 0;
  private kernelsStarted = 0;

  constructor(private readonly options: ScriptedBackendOptions = {}) {
    this.run = scriptRunner(options.execute);
  }

  /** Sandboxes not yet ended. */
  get liveSandboxes(): ScriptedSandbox[] {
    return this.sandboxes.filter((sandbox) => sandbox.alive);
  }

  async ensureAvailable(): Promise<void> {
    if (this.options.unavailableReason !== undefined) {
      throw new BackendUnavailableError(this.options.unavailableReason);
    }
  }

  async createVolume(options: CreateVolumeOptions): Promise<ScriptedVolume> {
    const volume = new ScriptedVolume(options.sessionId);
    this.volumes.push(volume);
    return volume;
  }

  async start(options: StartSandboxOptions): Promise<ScriptedSandbox> {
    this.startAttempts += 1;
    await this.options.onStart?.({ attempt: this.startAttempts, options });
    const volume = options.volume as ScriptedVolume;
    const sandbox = new ScriptedSandbox({
      run: this.run,
      command: this.options.command ?? (() => []),
      files: volume.files,
      languages: this.options.languages ?? DEFAULT_LANGUAGES,
      nextKernelNumber: () => ++this.kernelsStarted,
      kernelStartMs: this.options.kernelStartMs ?? 0,
      protocolVersion: this.options.protocolVersion ?? KERNEL_PROTOCOL_VERSION,
      sendReady: this.options.sendReady ?? true,
      cpuSeconds: this.options.cpuSeconds?.(options),
    });
    this.sandboxes.push(sandbox);
    return sandbox;
  }
}

/** A scripted backend: `createScriptedBackend({ execute: ({ code }) => [{ type: 'stdout', text: code }] })`. */
export function createScriptedBackend(options: ScriptedBackendOptions = {}): ScriptedBackend {
  return new ScriptedBackend(options);
}

export { type ScriptedFileEntry, ScriptedFileError, ScriptedFileStore } from './file-store.js';
export type {
  CommandScript,
  ExecuteScript,
  ScriptedCommandContext,
  ScriptedCommandStep,
  ScriptedRun,
  ScriptedRunContext,
  ScriptedStep,
} from './script.js';
export { ScriptedSandbox } from './scripted-sandbox.js';
