/**
 * The Docker backend's options that need no Docker client type. The root
 * entry's `createBackend('docker' | 'auto', …)` takes these, so the root
 * declarations never name dockerode's types; a configured client is passed
 * through `sandcell/docker`.
 */
export interface DockerBackendSettings {
  /** The runtime image. @default `sandcell-runtime:<version>` of this sandcell (env SANDCELL_DOCKER_IMAGE) */
  image?: string;
  /** How long to wait for the engine to answer a ping. @default 5000 */
  connectTimeoutMs?: number;
}
