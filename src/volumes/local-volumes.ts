/**
 * The library's volumes: a store in the state directory's `volumes`, opened once per directory,
 * owned by `local` unless a session says otherwise; and `createVolume` and friends on it.
 */
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import { defaultStateDirectory } from '../internal/state-directory.js';
import { type VolumeRecord, VolumeStore } from './volume-store.js';

/** The owner of what the library makes when none is named (as snapshots'). */
const LOCAL_VOLUME_OWNER = 'local';
const opened = new Map<string, VolumeStore>();

/** The store in the default state directory (`$SANDCELL_STATE_DIR`, else ~/.local/share/sandcell). */
export function localVolumeStore(environment: Record<string, string | undefined> = process.env): VolumeStore {
  const directory = defaultStateDirectory(environment);
  if (directory === false) {
    throw new InvalidInputError(
      'Volumes are kept in the state directory, and SANDCELL_STATE_DIR is `none`: set it to a directory, or give the session a store (option `volumes`).',
    );
  }
  let store = opened.get(directory);
  if (!store) {
    const bytes = environment.SANDCELL_VOLUME_BYTES_PER_KEY;
    store = new VolumeStore({
      directory: path.join(directory, 'volumes'),
      ...(bytes ? { bytesPerOwner: Number(bytes) } : {}),
    });
    opened.set(directory, store);
  }
  return store;
}

export interface VolumeOptions {
  /** @default the state directory's store */
  volumes?: VolumeStore;
  /** @default `local` */
  owner?: string;
}

/** Makes a volume (a name of letters, digits, ".", "_", "-"), to mount with a session's `mounts`. */
export function createVolume(name: string, options: VolumeOptions = {}): Promise<VolumeRecord> {
  return (options.volumes ?? localVolumeStore()).create(options.owner ?? LOCAL_VOLUME_OWNER, name);
}

export function listVolumes(options: VolumeOptions = {}): Promise<VolumeRecord[]> {
  return (options.volumes ?? localVolumeStore()).list(options.owner ?? LOCAL_VOLUME_OWNER);
}

/** Deletes a volume and its files; refused while a session of this process mounts it. */
export function deleteVolume(nameOrId: string, options: VolumeOptions = {}): Promise<VolumeRecord> {
  return (options.volumes ?? localVolumeStore()).delete(options.owner ?? LOCAL_VOLUME_OWNER, nameOrId);
}

/**
 * Unmounts the images the library's stores mounted (as root): call it as a process that used volumes
 * ends. Their files stay; the next use mounts them again.
 */
export async function closeLocalVolumes(): Promise<void> {
  const stores = [...opened.values()];
  opened.clear();
  await Promise.all(stores.map((store) => store.close()));
}

export { LOCAL_VOLUME_OWNER };
