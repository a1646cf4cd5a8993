/**
 * What network a key may ask for: the operator's bound on every key. `'none'` forbids any network;
 * a list of rules permits exactly those (a key may ask for any of them, or fewer); `'any'` permits
 * whatever a key asks. A request outside the bound is refused (403), never narrowed silently.
 */
import { type NetworkOption, resolveNetworkOption } from '../network/network-option.js';
import { HttpError } from './errors.js';

export type NetworkPermission = 'none' | 'any' | string[];

/** The option a session gets: the requested one when the bound permits it, else a 403. Absent: the server's default. */
export function permittedNetwork(
  requested: NetworkOption | undefined,
  permission: NetworkPermission,
): NetworkOption | undefined {
  const asked = resolveNetworkOption(requested);
  if (!asked) return requested;
  if (permission === 'any') return asked;
  if (permission === 'none') {
    throw new HttpError(
      403,
      'network-not-permitted',
      'This server gives sessions no network access; the operator permits hosts with `sandcell serve --permit-host`.',
    );
  }
  const permitted = new Set(resolveNetworkOption({ allow: permission })?.allow ?? []);
  const refused = asked.allow.filter((rule) => !permitted.has(rule));
  if (refused.length > 0) {
    throw new HttpError(
      403,
      'network-not-permitted',
      `This server does not permit ${refused.map((rule) => JSON.stringify(rule)).join(', ')}; it permits: ${[...permitted].join(', ')}.`,
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
