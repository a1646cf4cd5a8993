/**
 * The gate a session gets when its options name none: one gate per session, on this host, listening
 * on a unix socket under the runtime directory.
 */
import { InvalidInputError } from '../errors.js';
import type { NetworkGate } from './gate-channel.js';

export function defaultNetworkGate(): NetworkGate {
  return {
    openChannel: async () => {
      throw new InvalidInputError('Internet access needs a network gate, and this build of sandcell has none yet.');
    },
  };
}
