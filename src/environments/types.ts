/**
 * What an environment is to the rest of sandcell: the runtime plus a layer
 * (extra Debian and Python packages, files, setup run at build time), built
 * once per backend and addressed by content. Sessions, the pool and every
 * front door choose one by name; only `resolveEnvironment` turns a name into
 * the built thing a backend starts sandboxes on.
 *
 * This is the interface the pool keys by (`Environment.name`): keep it small.
 */

import type { RootOptions } from '../backends/spec.js';

/** The backends an environment can be built for (bubblewrap needs its root-filesystem mode). */
export type EnvironmentBackendName = 'bubblewrap' | 'docker';

/** The name of the runtime itself, with no layer: what a session gets when it names none. */
export const DEFAULT_ENVIRONMENT_NAME = 'default';

/** A name: lower-case letters, digits and `-`, starting with a letter (it becomes an image repository and a kernelspec name). */
export const ENVIRONMENT_NAME_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;

export interface Environment {
  /** `default`, or the name of a built environment. Pools key by it. */
  name: string;
  /** Content hash of the build (12 hex digits); for `default`, the runtime's version. */
  hash: string;
  /** The backend's name (`bubblewrap`, `docker`; for `default`, whatever backend the session has). */
  backend: string;
  /**
   * What the backend starts sandboxes on: a root filesystem directory
   * (bubblewrap) or an image tag (Docker). For `default` it is undefined: the
   * backend's own configured root (host `/usr`, `--rootfs`, `--image`) is used.
   */
  backendRef: string | undefined;
  /**
   * Python modules imported when a session starts, as `import NAME` in a first cell would: loaded and
   * their top-level name bound in the session's namespace (a session's `preloadModules` only load).
   */
  warmImports: string[];
  /** Environment variables set in the sandbox (the session's own `environment` overrides them). */
  env: Record<string, string>;
  /** How the backend runs `backendRef` when it is not a sandcell build (an existing image: kernel mounted in). */
  rootOptions?: RootOptions;
  /** The wall its sessions need (the description's `isolation`): `gvisor` runs them on the gVisor backend, whatever the server's. */
  isolation?: Isolation;
}

/**
 * A stronger wall than the host kernel's namespaces and seccomp filter, asked for by an environment
 * (its description's `isolation`) or by an API key (`serve --gvisor-key`): the session runs on gVisor.
 */
export type Isolation = 'gvisor';

export const ISOLATIONS: readonly Isolation[] = ['gvisor'];

/**
 * How a name is resolved (`resolveEnvironment`, which throws EnvironmentNotFoundError naming the
 * build command). The name comes from the library's `SessionOptions.environmentName` (its
 * `environment` already means environment variables and is public), the CLI's `--env`, `/v1`
 * sessions' `environment`, E2B's `templateID`, the Jupyter kernelspec `python3-<name>`, `serve
 * --env` for the default. `Session.create` resolves the name (src/environments/select.ts) and the
 * session reports it as `session.environment`.
 */
export interface ResolveEnvironmentOptions {
  /** Which backend's build: an environment built only for Docker is not found for bubblewrap. */
  backend: EnvironmentBackendName;
  /** Where environments are stored. @default `<image store>/environments` (env SANDCELL_IMAGE_DIR) */
  storeDirectory?: string;
}
