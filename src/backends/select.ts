/**
 * Choosing a backend by name: `bubblewrap`, `docker`, `gvisor`, or `auto` (bubblewrap
 * when usable here, else Docker), as the CLI's --backend, the library's
 * `backend` option and SANDCELL_BACKEND spell it. `resolveBackend` is the one
 * place a name, or the lack of one, becomes a backend: sessions, pools, the
 * server and the CLI all go through it.
 */

import { BackendUnavailableError, InvalidInputError } from '../errors.js';
import { onceUntilFailure } from '../internal/once-until-failure.js';
import { type BubblewrapBackendOptions, createBubblewrapBackend } from './bubblewrap/index.js';
import { createDockerBackend } from './docker/index.js';
import type { DockerBackendSettings } from './docker/settings.js';
import { createGvisorBackend, type GvisorBackendOptions } from './gvisor/index.js';
import type { CreateVolumeOptions, Sandbox, SandboxBackend, SandboxVolume, StartSandboxOptions } from './spec.js';

export const BACKEND_NAMES = ['bubblewrap', 'docker', 'gvisor', 'auto'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** The backend used when neither an option nor SANDCELL_BACKEND names one. */
export const DEFAULT_BACKEND_NAME: BackendName = 'bubblewrap';

export interface BackendChoiceOptions {
  bubblewrap?: BubblewrapBackendOptions;
  /** A configured Docker client goes to `createDockerBackend` (`sandcell/docker`) instead. */
  docker?: DockerBackendSettings;
  gvisor?: GvisorBackendOptions;
}

export function isBackendName(value: string): value is BackendName {
  return (BACKEND_NAMES as readonly string[]).includes(value);
}

/** A backend by name; unknown names are an InvalidInputError listing the known ones. */
export function createBackend(name: string, options: BackendChoiceOptions = {}): SandboxBackend {
  if (!isBackendName(name)) {
    throw new InvalidInputError(`Unknown backend \`${name}\`; choose one of ${BACKEND_NAMES.join(', ')}.`);
  }
  if (name === 'bubblewrap') return createBubblewrapBackend(options.bubblewrap);
  if (name === 'docker') return createDockerBackend(options.docker);
  if (name === 'gvisor') return createGvisorBackend(options.gvisor);
  return new AutoBackend(options);
}

const shared = new Map<string, SandboxBackend>();

/** The process-wide backend of a name, created with default options on first use. */
export function sharedBackend(name: string): SandboxBackend {
  let backend = shared.get(name);
  if (!backend) {
    backend = createBackend(name);
    shared.set(name, backend);
  }
  return backend;
}

/** The name a backend is chosen by when none is given: SANDCELL_BACKEND, else bubblewrap. */
export function defaultBackendName(environment: NodeJS.ProcessEnv = process.env): string {
  return environment.SANDCELL_BACKEND || DEFAULT_BACKEND_NAME;
}

/**
 * The backend for `choice`: an instance as it is; a name (none: SANDCELL_BACKEND,
 * else bubblewrap) as the process-wide backend of that name, so a host is
 * prepared once — or, when `options` are given (a CLI --rootfs), a new one
 * made with them. An unknown name is an InvalidInputError listing the known ones.
 */
export function resolveBackend(choice?: SandboxBackend | string, options?: BackendChoiceOptions): SandboxBackend {
  if (typeof choice === 'object') return choice;
  const name = choice ?? defaultBackendName();
  return options ? createBackend(name, options) : sharedBackend(name);
}

/** The process-wide default backend (SANDCELL_BACKEND, else bubblewrap). */
export function getDefaultBackend(): SandboxBackend {
  return resolveBackend();
}

export interface BackendSelection {
  backend: SandboxBackend;
  /** Why this one: shown to the user. */
  reason: string;
}

/**
 * Picks bubblewrap when it can run here, else Docker, on first use; then
 * behaves exactly as the one it picked. `selection()` says which and why.
 */
export class AutoBackend implements SandboxBackend {
  readonly specificationVersion = 'v1' as const;
  private readonly selectionOnce = onceUntilFailure(() => this.select());
  private chosen?: SandboxBackend;

  constructor(private readonly options: BackendChoiceOptions = {}) {}

  get name(): string {
    return this.chosen?.name ?? 'auto';
  }

  selection(): Promise<BackendSelection> {
    return this.selectionOnce();
  }

  private async select(): Promise<BackendSelection> {
    const bubblewrap = createBubblewrapBackend(this.options.bubblewrap);
    let bubblewrapProblem: string;
    try {
      await bubblewrap.ensureAvailable();
      this.chosen = bubblewrap;
      return { backend: bubblewrap, reason: 'bubblewrap is usable here' };
    } catch (error) {
      bubblewrapProblem = (error as Error).message;
    }
    const docker = createDockerBackend(this.options.docker);
    try {
      await docker.ensureAvailable();
    } catch (error) {
      throw new BackendUnavailableError(
        `No backend can run here. bubblewrap: ${bubblewrapProblem} Docker: ${(error as Error).message}`,
        { cause: error },
      );
    }
    this.chosen = docker;
    return { backend: docker, reason: `bubblewrap is not usable (${bubblewrapProblem})` };
  }

  async ensureAvailable(): Promise<void> {
    await this.selection();
  }

  async createVolume(options: CreateVolumeOptions): Promise<SandboxVolume> {
    return (await this.selection()).backend.createVolume(options);
  }

  async start(options: StartSandboxOptions): Promise<Sandbox> {
    return (await this.selection()).backend.start(options);
  }

  /** The chosen backend on another root; only once chosen, since a root is one backend's (a directory or an image). */
  withRoot(root: string): SandboxBackend {
    if (!this.chosen) {
      throw new BackendUnavailableError(
        'The auto backend has not chosen yet: call ensureAvailable() before withRoot().',
      );
    }
    if (!this.chosen.withRoot)
      throw new BackendUnavailableError(`The ${this.chosen.name} backend cannot run environments.`);
    return this.chosen.withRoot(root);
  }
}
