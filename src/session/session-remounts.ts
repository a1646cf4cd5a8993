/** What a resume or a fork mounts of the volumes its source recorded. */
import type { MountedVolume } from '../volumes/session-mounts.js';
import { VolumeNotFoundError } from '../volumes/volume-errors.js';
import type { VolumeStore } from '../volumes/volume-store.js';
import type { SkippedName } from './kernel-messages.js';
import type { VolumeMount } from './options.js';

/** A mounted volume as a mount request (by its id, so a rename or a namesake cannot change it). */
export function asMount(mounted: MountedVolume): VolumeMount {
  return {
    volume: mounted.volumeId,
    path: mounted.path,
    ...(mounted.readOnly ? { readOnly: true } : {}),
    ...(mounted.subPath ? { subPath: mounted.subPath } : {}),
  };
}

/**
 * The volumes a snapshot recorded, as mounts for its resume; those deleted since are left out, each
 * with a line for the resume's report (its contents were the volume's, never the snapshot's).
 */
export async function remountable(
  recorded: MountedVolume[],
  store: VolumeStore,
  owner: string,
): Promise<{ mounts: VolumeMount[]; gone: SkippedName[] }> {
  const mounts: VolumeMount[] = [];
  const gone: SkippedName[] = [];
  for (const mounted of recorded) {
    const exists = await store.get(owner, mounted.volumeId).then(
      () => true,
      (error: unknown) => {
        if (error instanceof VolumeNotFoundError) return false;
        throw error;
      },
    );
    if (exists) {
      mounts.push(asMount(mounted));
    } else {
      gone.push({
        name: `volume ${mounted.volume} at ${mounted.path}`,
        reason: 'the volume was deleted after the snapshot, so it is not mounted',
      });
    }
  }
  return { mounts, gone };
}
