/**
 * What network a key may ask for: the operator's bound on every key. `'none'` forbids any network;
 * a list of rules permits exactly those (a key may ask for any of them, or fewer); `'any'` permits
 * whatever a key asks but this machine's own services (`host.sandcell.internal`), which are permitted
 * only by name. A request outside the bound is refused (403), never narrowed silently.
 */
import { HOST_LOOPBACK_NAME } from '../../network/host-loopback.js';
import { type NetworkOption, resolveNetworkOption } from '../../network/network-option.js';
import { HttpError } from '../http/errors.js';

export type NetworkPermission = 'none' | 'any' | string[];

/** The option a session gets: the requested one when the bound permits it, else a 403. Absent: the server's default. */
export function permittedNetwork(
  requested: NetworkOption | undefined,
  permission: NetworkPermission,
): NetworkOption | undefined {
  const asked = resolveNetworkOption(requested);
  if (!asked) return requested;
  if (permission === 'any') {
    // `any` is the internet's hosts: this machine's own services (its sandcell server among them) only by name.
    const local = asked.allow.filter(
      (rule) => rule === HOST_LOOPBACK_NAME || rule.startsWith(`${HOST_LOOPBACK_NAME}:`),
    );
    if (local.length > 0) {
      throw new HttpError(
        403,
        'network-not-permitted',
        `This server does not permit ${local.map((rule) => JSON.stringify(rule)).join(', ')}: \`--permit-host any\` covers other hosts, not this machine's own services; the operator permits one by naming it (\`sandcell serve --permit-host ${local[0]}\`).`,
      );
    }
    return asked;
  }
  // A key that asked for the package index is told the flag that permits it.
  const indexHint = asked.packageIndex
    ? ' The package index (network.packageIndex) is permitted with `sandcell serve --allow-package-index`.'
    : '';
  if (permission === 'none') {
    throw new HttpError(
      403,
      'network-not-permitted',
      `This server gives sessions no network access; the operator permits hosts with \`sandcell serve --permit-host\`.${indexHint}`,
    );
  }
  const permitted = new Set(resolveNetworkOption({ allow: permission })?.allow ?? []);
  const refused = asked.allow.filter((rule) => !permitted.has(rule));
  if (refused.length > 0) {
    throw new HttpError(
      403,
      'network-not-permitted',
      `This server does not permit ${refused.map((rule) => JSON.stringify(rule)).join(', ')}; it permits: ${[...permitted].join(', ')}.${indexHint}`,
    );
  }
  return asked;
}

/**
 * The bound when the operator set none: the hosts of the server's default allow-list (a key may keep
 * them or ask for fewer), else no network.
 */
export function defaultPermission(serverDefault: NetworkOption | undefined): NetworkPermission {
  return resolveNetworkOption(serverDefault)?.allow ?? 'none';
}
