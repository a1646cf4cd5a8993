/**
 * The scripted backend: backend spec v1 with no sandbox at all. Each kernel
 * is an object in this process that speaks the real kernel protocol over
 * in-memory streams and answers runs from a script, so tests of sandcell's
 * own logic (queueing, timeouts, restarts, caps, pools, servers) run in
 * milliseconds on any machine, and a kernel can hang, die or break the
 * protocol on cue. It isolates nothing: it is for tests only.
 */
import { BackendUnavailableError } from '../../errors.js';
import { KERNEL_PROTOCOL_VERSION } from '../../kernel/index.js';
import type { CreateVolumeOptions, SandboxBackend, SandboxVolume, StartSandboxOptions } from '../spec.js';
import { ScriptedFileStore } from './file-store.js';
import { type ExecuteScript, type ScriptedRun, scriptRunner } from './script.js';
import { ScriptedSandbox } from './scripted-sandbox.js';

export interface ScriptedBackendOptions {
  /** What each run does. @default every run succeeds with no output */
  execute?: ExecuteScript;
  /**
   * Called as each sandbox starts (`attempt` counts from 1); throwing makes
   * that start fail, as on a broken host. @default every start succeeds
   */
  onStart?: (context: { attempt: number; options: StartSandboxOptions }) => void | Promise<void>;
  /** When set, `ensureAvailable()` rejects with a BackendUnavailableError saying this. @default available */
  unavailableReason?: string;
  /** The protocol version the kernels announce. @default this sandcell's */
  protocolVersion?: number;
  /** False: kernels never say they are ready (a start that times out). @default true */
  sendReady?: boolean;
}

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
      files: volume.files,
      kernelNumber: this.sandboxes.length + 1,
      protocolVersion: this.options.protocolVersion ?? KERNEL_PROTOCOL_VERSION,
      sendReady: this.options.sendReady ?? true,
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
export type { ExecuteScript, ScriptedRun, ScriptedRunContext, ScriptedStep } from './script.js';
export { ScriptedSandbox } from './scripted-sandbox.js';
