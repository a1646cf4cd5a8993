/** The control plane's answers, in E2B's field names (the SDKs read `sandboxID`, `templateID`, `clientID`, `envdVersion`). */
import { DEFAULT_LIMITS } from '../../backends/limits.js';
import type { ResolvedServerOptions } from '../core/options.js';
import type { SandboxRow, SandboxState } from './sandbox-row.js';

/**
 * The envd version whose features envd here serves: raw and gzip uploads
 * (0.5.7), closing stdin (0.5.2), no default user (0.4.0); not file metadata
 * (0.6.2) nor watch entries (0.6.3), which the SDK then refuses on its side.
 */
export const ENVD_VERSION = '0.5.7';
/** E2B names the client that created a sandbox; a self-hosted server has one. */
const CLIENT_ID = 'sandcell';

/** What create and connect answer: how to reach the sandbox. */
export function presentConnection(sandbox: SandboxRow, domain: string) {
  return {
    sandboxID: sandbox.id,
    templateID: sandbox.templateId,
    clientID: CLIENT_ID,
    envdVersion: ENVD_VERSION,
    envdAccessToken: sandbox.envdAccessToken,
    trafficAccessToken: sandbox.trafficAccessToken,
    // The SDKs' getHost(port) is `${port}-${sandboxID}.${domain}`, which the port door serves.
    domain,
  };
}

/**
 * What get-info and list answer: the sandbox's state, resources and metadata (no tokens: list is not
 * a way to obtain them). A sandbox the server paused while it was idle runs, to its clients; a
 * paused one ends (`endAt`) when it was paused, as in E2B. get-info adds the lifecycle.
 */
export function presentInfo(
  sandbox: SandboxRow,
  state: SandboxState,
  options: ResolvedServerOptions,
  domain: string,
  detail = false,
) {
  const limits = { ...DEFAULT_LIMITS, ...options.sessionOptions.limits };
  const paused = state === 'paused';
  return {
    sandboxID: sandbox.id,
    templateID: sandbox.templateId,
    clientID: CLIENT_ID,
    envdVersion: ENVD_VERSION,
    startedAt: sandbox.startedAt.toISOString(),
    endAt: (paused ? (sandbox.pausedAt ?? sandbox.endAt) : sandbox.endAt).toISOString(),
    state: paused ? ('paused' as const) : ('running' as const),
    cpuCount: Math.max(1, Math.round(limits.cpus)),
    memoryMB: Math.round(limits.memoryBytes / 2 ** 20),
    diskSizeMB: Math.round(limits.dataBytes / 2 ** 20),
    metadata: sandbox.metadata,
    domain,
    // The volumes its live session mounts (E2B's `{name, path}`).
    volumeMounts: (sandbox.entry?.session.closed === false ? sandbox.entry.session.mounts : []).map((mount) => ({
      name: mount.volume,
      path: mount.path,
    })),
    ...(detail
      ? {
          lifecycle: sandbox.lifecycle,
          network: {
            allowPublicTraffic: sandbox.traffic.public,
            ...(sandbox.traffic.maskRequestHost !== undefined
              ? { maskRequestHost: sandbox.traffic.maskRequestHost }
              : {}),
            ...(sandbox.traffic.httpsPorts.length > 0 ? { httpsPorts: sandbox.traffic.httpsPorts } : {}),
          },
        }
      : {}),
  };
}
