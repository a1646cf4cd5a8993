/**
 * E2B's network fields on a sandbox creation, as sandcell's `network` option. E2B's own default is
 * open internet, and its SDKs send `allow_internet_access: true` unless told otherwise: sandcell has no
 * open internet, so `true` (or nothing) means the server's default, `false` means none, and
 * `network.allowOut` is the allow-list (its entries take precedence over `denyOut`, as in E2B, and
 * everything not allowed is denied anyway). What sandcell cannot honour is refused, not ignored:
 * request rules (header transforms) and an egress proxy.
 */
import { z } from 'zod';
import { MAX_ALLOW_RULES, MAX_RULE_LENGTH, type NetworkOption } from '../../network/network-option.js';
import { E2bError } from './errors.js';
import type { TrafficPolicy } from './sandbox-keep.js';

export const NetworkFields = {
  allow_internet_access: z.boolean().nullish(),
  network: z
    .looseObject({
      allowOut: z.array(z.string().min(1).max(MAX_RULE_LENGTH)).max(MAX_ALLOW_RULES).nullish(),
      denyOut: z.array(z.string().max(MAX_RULE_LENGTH)).max(MAX_ALLOW_RULES).nullish(),
      rules: z.unknown().optional(),
      egressProxy: z.unknown().optional(),
      allowPublicTraffic: z.boolean().nullish(),
      maskRequestHost: z.string().min(1).max(256).nullish(),
      httpsPorts: z.array(z.number().int().min(1).max(65_535)).max(64).nullish(),
    })
    .nullish(),
};

export interface NetworkRequest {
  allow_internet_access?: boolean | null | undefined;
  network?: {
    allowOut?: string[] | null;
    denyOut?: string[] | null;
    rules?: unknown;
    egressProxy?: unknown;
    allowPublicTraffic?: boolean | null;
    maskRequestHost?: string | null;
    httpsPorts?: number[] | null;
  } | null;
}

/**
 * Who may reach the sandbox's ports (src/server/ports/): everyone unless `allowPublicTraffic` is
 * false (E2B's default is true), the Host the app sees, and the ports whose app speaks TLS.
 */
export function trafficOfCreation(body: NetworkRequest): TrafficPolicy {
  const network = body.network ?? undefined;
  const mask = network?.maskRequestHost ?? undefined;
  if (mask !== undefined && !/^[\x21-\x7e]+$/.test(mask)) {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: E2B's placeholder, as its users write it
    throw new E2bError(400, 'network.maskRequestHost is a host name, with ${PORT} where the port goes.');
  }
  const httpsPorts = [...new Set(network?.httpsPorts ?? [])];
  if (httpsPorts.includes(49_983)) throw new E2bError(400, 'network.httpsPorts cannot list envd’s port, 49983.');
  return {
    public: network?.allowPublicTraffic !== false,
    ...(mask !== undefined ? { maskRequestHost: mask } : {}),
    httpsPorts,
  };
}

/** The session's network option, or undefined for the server's default. */
export function networkOfCreation(body: NetworkRequest): NetworkOption | undefined {
  const network = body.network ?? undefined;
  if (network?.rules !== undefined && network.rules !== null) {
    throw new E2bError(400, 'network.rules (request transforms) are not supported by this server.');
  }
  if (network?.egressProxy !== undefined && network.egressProxy !== null) {
    throw new E2bError(400, 'network.egressProxy is not supported by this server.');
  }
  const allowOut = network?.allowOut ?? [];
  if (allowOut.length > 0) return { allow: allowOut };
  if (body.allow_internet_access === false) return 'none';
  return undefined;
}
