/**
 * Measuring and resizing the data budget's volumes, many at once (the
 * budget's lock is held by the caller). Resizes asked for together run in one
 * process (tmpfs.ts), so a step that touches a hundred volumes costs one
 * process start, not a hundred.
 */
import { floorToPage } from './tmpfs.js';

/** A mounted volume the budget can measure and resize. */
export interface DataBudgetMember {
  usedBytes(): Promise<number>;
  /** Rejects when the files already occupy more than `sizeBytes`. */
  resize(sizeBytes: number): Promise<void>;
}

/** A volume as the budget keeps it: its size, and its member once mounted (none while mounting or leaving). */
export interface SizedVolume {
  member?: DataBudgetMember;
  sizeBytes: number;
  /** What the files held when last measured. */
  measuredBytes?: number;
}

/** A shrink fails when the files grew meanwhile; measure again this many times. */
const SHRINK_ATTEMPTS = 3;

/** What each volume's files occupy; a volume not mounted (or leaving) counts as full. */
export function measureVolumes(volumes: SizedVolume[]): Promise<number[]> {
  return Promise.all(
    volumes.map(async (volume) => {
      if (!volume.member) return volume.sizeBytes;
      const used = await volume.member.usedBytes().catch(() => volume.sizeBytes);
      volume.measuredBytes = used;
      return used;
    }),
  );
}

/**
 * Shrinks each volume above its target to it, never below what it holds: the
 * volumes are measured, then resized all at once; one whose files grew past
 * the target meanwhile is measured and tried again.
 */
export async function shrinkVolumes(volumes: SizedVolume[], targets: number[]): Promise<void> {
  // Every shrink asked for happens, however small: with many volumes, the room a new one
  // gets is the sum of many sub-MiB shrinks (only grows are skipped below a MiB).
  let left = volumes
    .map((volume, index) => ({ volume, target: targets[index] as number }))
    .filter(({ volume, target }) => volume.member && volume.sizeBytes > target);
  for (let attempt = 0; attempt < SHRINK_ATTEMPTS && left.length > 0; attempt++) {
    const sizes = await Promise.all(
      left.map(({ volume, target }) =>
        (volume.member?.usedBytes() ?? Promise.reject()).then(
          (used) => Math.max(target, used),
          () => volume.sizeBytes,
        ),
      ),
    );
    const done = await Promise.all(
      left.map(async ({ volume }, index) => {
        const size = sizes[index] as number;
        if (!volume.member || size >= volume.sizeBytes) return true;
        try {
          await volume.member.resize(size);
          volume.sizeBytes = size;
          return true;
        } catch {
          return false;
        }
      }),
    );
    left = left.filter((_, index) => !done[index]);
  }
}

/** Grows volumes towards their targets, all at once, together by at most `roomBytes` (whole pages). */
export async function growVolumes(volumes: SizedVolume[], targets: number[], roomBytes: number): Promise<void> {
  let room = roomBytes;
  const grows: { volume: SizedVolume; member: DataBudgetMember; size: number }[] = [];
  for (const [index, volume] of volumes.entries()) {
    const size = floorToPage(Math.min(targets[index] as number, volume.sizeBytes + room));
    if (size <= volume.sizeBytes || !volume.member) continue;
    grows.push({ volume, member: volume.member, size });
    room -= size - volume.sizeBytes;
  }
  await Promise.all(
    grows.map(async ({ volume, member, size }) => {
      try {
        await member.resize(size);
        volume.sizeBytes = size;
      } catch {
        // Unmounted meanwhile (being disposed of): its lease goes soon.
      }
    }),
  );
}
