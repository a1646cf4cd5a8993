/**
 * How the server-wide data budget is divided among the volumes (pure: the
 * stateful side, which measures and resizes, is data-budget.ts). A plan is
 * what each volume is due; the sizes volumes actually have may lag behind it
 * on purpose, because every resize is a remount and the number of volumes can
 * be in the hundreds:
 *
 * - when a new volume finds too little uncommitted room, the others shrink as
 *   if a quarter more volumes were arriving (`plannedWithReserve`), so that
 *   the next arrivals find room without resizing anyone: a burst of N new
 *   sessions costs a few remounts per session instead of N each;
 * - while volumes share the budget, one grows only once its files use half of
 *   the room its plan gives it (`growthWanted`): an idle volume keeps its
 *   smaller size, a writing one gets its share before it runs out.
 */
import { floorToPage, PAGE_BYTES } from './tmpfs.js';

const MiB = 1024 * 1024;

/** Smaller grows of a volume are not worth a remount (shrinks the plan needs always happen). */
export const RESIZE_STEP_BYTES = MiB;

/** Share of the volumes present for which room is set aside when others must shrink for a new one. */
const RESERVE_SHARE = 1 / 4;

export interface VolumeDemand {
  dataBytes: number;
  usedBytes: number;
}

/**
 * The size of each volume: its `dataBytes` while they all fit in the budget;
 * otherwise what it holds plus an equal share of what is left, where a volume
 * that needs less than its share (it is near its `dataBytes`) leaves the rest
 * to the others. The sizes never add up to more than the budget, unless the
 * files alone already do.
 */
export function planDataSizes(volumes: readonly VolumeDemand[], budgetBytes: number): number[] {
  if (sum(volumes.map((volume) => volume.dataBytes)) <= budgetBytes) return volumes.map((volume) => volume.dataBytes);
  // At least a page each: a tmpfs of size 0 would have no limit at all.
  const used = volumes.map((volume) => Math.max(PAGE_BYTES, Math.min(volume.usedBytes, volume.dataBytes)));
  const headroom = volumes.map((volume, index) => volume.dataBytes - (used[index] as number));
  let remaining = Math.max(0, budgetBytes - sum(used));
  const sizes = [...used];
  const smallestNeedFirst = volumes
    .map((_, index) => index)
    .sort((a, b) => (headroom[a] as number) - (headroom[b] as number));
  smallestNeedFirst.forEach((index, position) => {
    const share = remaining / (smallestNeedFirst.length - position);
    const given = floorToPage(Math.min(headroom[index] as number, share));
    sizes[index] = (used[index] as number) + given;
    remaining -= given;
  });
  return sizes;
}

/**
 * The plan for `volumes` with room set aside for arrivals: as if a quarter
 * more (at least one) empty volumes of `arrivingDataBytes` were there too.
 * Only the sizes of `volumes` are returned. No size is above planDataSizes'
 * for the same volumes (an extra volume only ever takes from the others).
 */
export function plannedWithReserve(
  volumes: readonly VolumeDemand[],
  budgetBytes: number,
  arrivingDataBytes: number,
): number[] {
  const reserved = Math.max(1, Math.ceil(volumes.length * RESERVE_SHARE));
  const arrivals = Array.from({ length: reserved }, () => ({ dataBytes: arrivingDataBytes, usedBytes: 0 }));
  return planDataSizes([...volumes, ...arrivals], budgetBytes).slice(0, volumes.length);
}

/**
 * Whether a volume of `sizeBytes` holding `usedBytes` should grow towards its
 * planned size: by at least RESIZE_STEP_BYTES (or up to its whole `dataBytes`),
 * and, while volumes share the budget, only once its files use half of the
 * room the plan gives it. Without sharing every volume simply has its `dataBytes`.
 */
export function growthWanted(
  volume: VolumeDemand & { sizeBytes: number },
  plannedBytes: number,
  shared: boolean,
): boolean {
  const { sizeBytes, usedBytes, dataBytes } = volume;
  if (plannedBytes <= sizeBytes) return false;
  if (plannedBytes - sizeBytes < RESIZE_STEP_BYTES && plannedBytes !== dataBytes) return false;
  if (!shared) return true;
  return sizeBytes - usedBytes < (plannedBytes - usedBytes) / 2;
}

export function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
