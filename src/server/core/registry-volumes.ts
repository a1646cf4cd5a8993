/**
 * The keys' volumes as the server's doors reach them: the store in the state directory, and in a
 * cluster the node that keeps each key's (volume-homes.ts). Every door asks here before it touches
 * a volume or mounts one, so a request for volumes another node keeps is answered there (relayed)
 * or refused with the reason, never served from an empty store on the wrong node.
 */
import { VolumesUnavailableError } from '../../volumes/volume-errors.js';
import type { VolumeRecord, VolumeStore } from '../../volumes/volume-store.js';
import type { Owner } from './auth.js';
import type { VolumeHomes, VolumeUse } from './volume-homes.js';

export interface RegistryVolumesOptions {
  /** The keys' volumes; absent, a request for one is refused (no state directory). */
  store?: VolumeStore;
  /** In a cluster: which node keeps each key's volumes. */
  homes?: VolumeHomes;
  /** This node's name in a cluster. */
  node?: string;
  isDraining: () => boolean;
  /** How a live session is named to its client (`sandbox ID`, `session ID`), for a refused delete. */
  nameOf: (sessionId: string) => string;
}

export class RegistryVolumes {
  constructor(private readonly options: RegistryVolumesOptions) {}

  /** This node's store, or why this server keeps no volumes. */
  local(): VolumeStore {
    if (!this.options.store) {
      throw new VolumesUnavailableError(
        'Volumes are kept in the state directory, and this server has none (SANDCELL_STATE_DIR=none).',
      );
    }
    return this.options.store;
  }

  /**
   * The store holding the owner's volumes, when it is this node's: for `files` (the volume APIs),
   * `sessions` (a session that mounts some) or `create` (a new volume, which makes this node the
   * key's home in a cluster when it has none). Else a VolumesElsewhereError: relayed to the node
   * that keeps them, or why that node cannot answer now.
   */
  async of(owner: Owner, use: VolumeUse | 'create'): Promise<VolumeStore> {
    const store = this.local();
    const { homes, node } = this.options;
    if (!homes) return store;
    const draining = this.options.isDraining();
    const home = await homes.homeOf(owner.id, use === 'create' && !draining);
    // No home anywhere: the owner has no volume, which this node's (empty) store says as well as any.
    if (home === node || (home === undefined && use !== 'create')) return store;
    throw await homes.elsewhere(home, use === 'create' ? 'files' : use);
  }

  /** The store holding the volume this id names (its id carries its node's tag): for its token alone. */
  async holding(volumeId: string): Promise<VolumeStore> {
    const store = this.local();
    const home = await this.options.homes?.homeOfVolume(volumeId);
    if (home === undefined || home === this.options.node) return store;
    throw await (this.options.homes as VolumeHomes).elsewhere(home, 'files');
  }

  /** Deletes one of the owner's volumes, refused while a live session mounts it (named as its door names it). */
  async delete(owner: Owner, nameOrId: string): Promise<VolumeRecord> {
    return (await this.of(owner, 'files')).delete(owner.id, nameOrId, { nameOf: this.options.nameOf });
  }
}
