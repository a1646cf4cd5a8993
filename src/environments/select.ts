/**
 * A session's environment becomes its backend: the default environment is
 * the backend as configured; a built one is the same backend on the
 * environment's root (its root filesystem for bubblewrap and gVisor, its
 * image for Docker), whatever root the backend itself was given.
 */

import { sharedBackend } from '../backends/select.js';
import type { SandboxBackend } from '../backends/spec.js';
import { BackendUnavailableError } from '../errors.js';
import { runtimeVersion } from '../image/recipe.js';
import { defaultEnvironment, resolveEnvironment } from './store.js';
import { DEFAULT_ENVIRONMENT_NAME, type Environment, type EnvironmentBackendName, type Isolation } from './types.js';

export interface EnvironmentChoice {
  backend: SandboxBackend;
  environment: Environment;
}

export interface ChooseEnvironmentOptions {
  /** Where environments are stored. @default `<image store>/environments` */
  storeDirectory?: string;
  signal?: AbortSignal;
}

/**
 * The backend a session in `name` runs on. `base` is prepared first (an
 * `auto` backend has to have chosen before its root can be known).
 */
export async function chooseEnvironment(
  base: SandboxBackend,
  name: string | undefined,
  options: ChooseEnvironmentOptions = {},
): Promise<EnvironmentChoice> {
  if (name === undefined || name === DEFAULT_ENVIRONMENT_NAME) {
    return { backend: base, environment: defaultEnvironment(base.name, runtimeVersion()) };
  }
  await base.ensureAvailable({ signal: options.signal });
  // gVisor runs bubblewrap's builds: both start sandboxes on a root filesystem directory.
  const backendName = base.name === 'gvisor' ? 'bubblewrap' : base.name;
  if (!isEnvironmentBackend(backendName) || !base.withRoot) {
    throw new BackendUnavailableError(
      `The ${base.name} backend cannot run built environments (only bubblewrap, gvisor and docker can); leave out the environment ${name}.`,
    );
  }
  const environment = await resolveEnvironment(name, { backend: backendName, storeDirectory: options.storeDirectory });
  if (environment.isolation === 'gvisor' && base.name !== 'gvisor') return onGvisor(environment, options);
  return { backend: base.withRoot(environment.backendRef as string, environment.rootOptions), environment };
}

/**
 * An environment whose description asks for gVisor, on a server of another backend: its sessions run
 * on the gVisor backend, on the environment's bubblewrap build (a root filesystem, which gVisor runs).
 */
async function onGvisor(environment: Environment, options: ChooseEnvironmentOptions): Promise<EnvironmentChoice> {
  const gvisor = isolatedBackend('gvisor');
  await gvisor.ensureAvailable({ signal: options.signal });
  const built =
    environment.backend === 'bubblewrap'
      ? environment
      : await resolveEnvironment(environment.name, { backend: 'bubblewrap', storeDirectory: options.storeDirectory });
  return {
    backend: (gvisor.withRoot as NonNullable<SandboxBackend['withRoot']>)(built.backendRef as string),
    environment: { ...built, backend: 'gvisor' },
  };
}

/** The backend a session of `isolation` runs on, whatever the server's: one per process. */
export function isolatedBackend(isolation: Isolation): SandboxBackend {
  return sharedBackend(isolation);
}

function isEnvironmentBackend(name: string): name is EnvironmentBackendName {
  return name === 'bubblewrap' || name === 'docker';
}
