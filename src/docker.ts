/**
 * sandcell/docker: the Docker backend by itself, for a configured dockerode
 * client or a report on the engine. Its own entry so the root's declarations
 * never name dockerode's types: TypeScript users of this entry add
 * `@types/dockerode`. The root entry still runs sessions on Docker by name
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
