/**
 * sandcell/docker: the Docker backend by itself, for a configured dockerode
 * client or a report on the engine. Its declarations name dockerode's types,
 * so `@types/dockerode` is one of sandcell's dependencies (TypeScript's rule
 * for declarations that expose another package's types); its own entry keeps
 * them out of the root's declarations, which stay free of Docker's API. The
 * root entry still runs sessions on Docker by name
 * (`createSession({ backend: 'docker' })`, `createBackend('docker')`).
 * Named exports only.
 */
export {
  createDockerBackend,
  DockerBackend,
  type DockerBackendOptions,
  type DockerEngineReport,
} from './backends/docker/index.js';
export type { DockerBackendSettings } from './backends/docker/settings.js';
