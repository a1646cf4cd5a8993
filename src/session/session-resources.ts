/**
 * What a new session runs on, gathered before its first sandbox starts: its
 * id, its options with its environment's beneath them, a backend that is
 * available, its volume and, with internet access, its own channel to the
 * network gate, and, where the backend serves ports, its ingress: the host's
 * way in to them (what was opened is given back when the next cannot be);
 * and what its sandboxes are told of those. The session gives them back when
 * it closes.
 */
import { randomUUID } from 'node:crypto';
import { resolveBackend } from '../backends/select.js';
import type { SandboxBackend, SandboxIngress, SandboxVolume } from '../backends/spec.js';
import { chooseEnvironment } from '../environments/select.js';
import type { Environment } from '../environments/types.js';
import { InvalidInputError } from '../errors.js';
import { defaultNetworkGate } from '../network/default-gate.js';
import type { NetworkChannel, SandboxNetwork } from '../network/gate-channel.js';
import { type IngressChannel, openIngress } from '../network/ingress.js';
import type { NetworkAllowList } from '../network/network-option.js';
import { hostPackageIndex } from '../network/package-index.js';
import { LOCAL_VOLUME_OWNER, localVolumeStore } from '../volumes/local-volumes.js';
import { SessionMounts } from '../volumes/session-mounts.js';
import { VolumesUnavailableError } from '../volumes/volume-errors.js';
import { type ResolvedSessionOptions, resolveSessionOptions, type SessionOptions } from './options.js';

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface SessionResources {
  id: string;
  backend: SandboxBackend;
  /** The environment it runs in (`default` unless `environmentName` chose one). */
  environment: Environment;
  options: ResolvedSessionOptions;
  volume: SandboxVolume;
  /** Its channel to the network gate, when it has internet access. */
  networkChannel?: NetworkChannel;
  /** Its ingress, when the backend serves ports (SandboxBackend.servesPorts). */
  ingress?: IngressChannel;
  /** The volumes it mounts, ready on the host. */
  mounts: SessionMounts;
}

/** Checks the options, then opens what a session with them runs on. */
export async function openSessionResources(options: SessionOptions): Promise<SessionResources> {
  const sessionOptions = resolveSessionOptions(options);
  const id = options.id ?? randomUUID().replace(/-/g, '').slice(0, 16);
  if (!SESSION_ID.test(id)) throw new InvalidInputError('A session id is 1 to 64 letters, digits, "-" or "_".');
  const { backend, environment } = await chooseEnvironment(
    resolveBackend(options.backend),
    options.environmentName ?? (process.env.SANDCELL_ENVIRONMENT || undefined),
    { signal: options.signal },
  );
  const resolved: ResolvedSessionOptions = {
    ...sessionOptions,
    warmImports: environment.warmImports,
    environment: { ...environment.env, ...sessionOptions.environment },
  };
  await backend.ensureAvailable({ signal: options.signal });
  const volume = await backend.createVolume({ sessionId: id, limits: resolved.limits, signal: options.signal });
  let channel: NetworkChannel | undefined;
  if (resolved.network) {
    const gate = options.networkGate ?? defaultNetworkGate();
    const { allow, secrets, trustedCertificates } = resolved.network;
    channel = await gate
      .openChannel({
        sessionId: id,
        allow,
        ...(secrets ? { secrets } : {}),
        ...(trustedCertificates !== undefined ? { trustedCertificates } : {}),
        ...(volume.owner ? { owner: { uid: volume.owner.uid, gid: volume.owner.gid } } : {}),
      })
      .catch(async (error) => {
        await volume.dispose();
        throw error;
      });
  }
  let ingress: IngressChannel | undefined;
  if (backend.servesPorts) {
    const owner = volume.owner;
    ingress = await openIngress({ ...(owner ? { owner: { uid: owner.uid, gid: owner.gid } } : {}) }).catch(
      async (error) => {
        await channel?.close();
        await volume.dispose();
        throw error;
      },
    );
  }
  let mounts = SessionMounts.none();
  if (resolved.mounts.length > 0) {
    try {
      if (!backend.mountsDirectories) {
        throw new VolumesUnavailableError(`The ${backend.name} backend mounts no volumes: use bubblewrap or docker.`);
      }
      mounts = await SessionMounts.open({
        store: options.volumes ?? localVolumeStore(),
        owner: options.owner ?? LOCAL_VOLUME_OWNER,
        sessionId: id,
        requests: resolved.mounts,
        ...(volume.owner ? { sandboxOwner: { uid: volume.owner.uid, gid: volume.owner.gid } } : {}),
      });
    } catch (error) {
      await ingress?.close();
      await channel?.close();
      await volume.dispose();
      throw error;
    }
  }
  return {
    id,
    backend,
    environment,
    options: resolved,
    volume,
    ...(channel ? { networkChannel: channel } : {}),
    ...(ingress ? { ingress } : {}),
    mounts,
  };
}

/** What the session's sandboxes are told of its ingress; nothing without one. */
export function sandboxIngress(ingress: IngressChannel | undefined): { ingress?: SandboxIngress } {
  if (!ingress) return {};
  return {
    ingress: {
      socketPath: ingress.socketPath,
      ...(ingress.socketGroup !== undefined ? { socketGroup: ingress.socketGroup } : {}),
    },
  };
}

/** What the session's sandboxes are told of its network (`trustedCertificates`: its own); nothing without a channel. */
export function sandboxNetwork(
  channel: NetworkChannel | undefined,
  network: Pick<NetworkAllowList, 'trustedCertificates' | 'packageIndex'> | undefined,
): { network?: SandboxNetwork } {
  if (!channel) return {};
  const environment = network?.packageIndex ? hostPackageIndex().environment : {};
  return {
    network: {
      socketPath: channel.socketPath,
      ...(channel.socketGroup !== undefined ? { socketGroup: channel.socketGroup } : {}),
      ...sandboxCertificates(network?.trustedCertificates, channel.certificateAuthority),
      ...(Object.keys(environment).length > 0 ? { environment } : {}),
    },
  };
}

/**
 * What the sandbox trusts beside the system's CAs: the session's own certificates, and the
 * authority of its gate when it has secrets (the gate ends TLS for those hosts with it).
 */
function sandboxCertificates(
  trusted: string | undefined,
  gateAuthority: string | undefined,
): { trustedCertificates?: string } {
  const parts = [trusted, gateAuthority].filter((part): part is string => part !== undefined);
  if (parts.length === 0) return {};
  return { trustedCertificates: parts.map((part) => (part.endsWith('\n') ? part : `${part}\n`)).join('') };
}
