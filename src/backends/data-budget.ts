/**
 * The server-wide bound on RAM that cannot be reclaimed. Every session's
 * /mnt/data is its own tmpfs, whose pages stay in memory until the files are
 * removed, whatever happens to the kernels. The sizes of those mounts are
 * kept so that together they never exceed the budget (a hard bound, with no
 * tmpfs quotas needed): while the sessions' `dataBytes` fit, each volume has
 * all of its own and nothing is measured; past that, volumes are resized
 * (`mount -o remount,size=`) towards what they hold plus a fair share of what
 * is left (data-plan.ts), so a session writing past its share meets a full
 * disk (ENOSPC), and a new volume is refused once too little is left. Resizes
 * are remounts, so they are kept few: a new volume takes uncommitted room when
 * there is enough, others shrink only when there is not (and then leave room
 * for the next arrivals too), and a volume grows when its files need it.
 */
import os from 'node:os';
import { InvalidInputError, ResourceExhaustedError } from '../errors.js';
import { parseSize } from '../internal/units.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { growthWanted, planDataSizes, plannedWithReserve, sum, type VolumeDemand } from './data-plan.js';
import { type DataBudgetMember, growVolumes, measureVolumes, shrinkVolumes } from './data-resize.js';
import { floorToPage } from './tmpfs.js';

export { planDataSizes, type VolumeDemand } from './data-plan.js';
export type { DataBudgetMember } from './data-resize.js';

const MiB = 1024 * 1024;

/** Share of the host's memory all sessions' files may hold together, unless configured. */
export const DEFAULT_DATA_BUDGET_SHARE = 0.5;
/** A new volume is refused when less than this (or its whole `dataBytes`, if smaller) is left. */
export const MINIMUM_NEW_VOLUME_BYTES = 16 * MiB;
/** How long a new volume waits for volumes still being mounted before it counts them as they are. */
const PENDING_MOUNT_WAIT_MS = 30_000;
/** A new volume whose share of what is left comes out smaller than this is refused rather than mounted. */
const MINIMUM_SHARE_BYTES = MiB;
/** How often sizes are recomputed while the volumes' `dataBytes` together exceed the budget. */
export const REBALANCE_INTERVAL_MS = 2_000;
/** A file change smaller than this after an execution waits for the next periodic rebalance. */
const USAGE_CHANGE_BYTES = MiB;
const BUDGET_SETTING =
  'the data budget (`dataBudgetBytes`, `sandcell serve --data-budget-bytes`, env SANDCELL_DATA_BUDGET_BYTES)';

/** A volume's place in the budget, from before it is mounted until it is disposed of. */
export class DataLease {
  /** The size the volume has (or is to be mounted with). */
  sizeBytes = 0;
  member?: DataBudgetMember;
  /** What the files held when the budget last measured them. */
  measuredBytes?: number;
  /** Settles once the volume is mounted (attach) or given up (release): until then its size cannot change. */
  readonly settled: Promise<void>;
  private settle: () => void = () => undefined;
  private released?: Promise<void>;

  constructor(
    private readonly budget: DataBudget,
    readonly dataBytes: number,
  ) {
    this.settled = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  get isReleased(): boolean {
    return this.released !== undefined;
  }

  /** Called once the volume is mounted: from now on the budget may measure and resize it. */
  attach(member: DataBudgetMember): void {
    this.member = member;
    this.settle();
  }

  /**
   * Called when the volume is about to be unmounted: the budget stops
   * measuring and resizing it (a remount would only fail), while its size
   * stays committed until release().
   */
  detach(): void {
    this.member = undefined;
  }

  /**
   * The files may have changed (an execution ended): when volumes share the
   * budget and these files grew or shrank noticeably, recompute the shares
   * now rather than at the next tick. Otherwise one statfs, or nothing.
   */
  async usageChanged(): Promise<void> {
    if (this.released || !this.member || !this.budget.isShared) return;
    const used = await this.member.usedBytes().catch(() => undefined);
    if (used === undefined) return;
    if (this.measuredBytes !== undefined && Math.abs(used - this.measuredBytes) < USAGE_CHANGE_BYTES) return;
    await this.budget.rebalance();
  }

  /** Gives the volume's share back (after unmounting it, or when mounting failed). Idempotent. */
  release(): Promise<void> {
    // Settle first: a lease() waiting for this volume must not wait for the lock it holds.
    this.settle();
    this.released ??= this.budget.releaseLease(this);
    return this.released;
  }
}

export interface DataBudgetSnapshot {
  budgetBytes: number;
  volumes: number;
  /** The volumes' `dataBytes` together; above the budget, volumes are sized to share it. */
  demandBytes: number;
  /** The volumes' sizes together: never above the budget unless their files alone are. */
  committedBytes: number;
}

export class DataBudget {
  private budget: number;
  private readonly leases = new Set<DataLease>();
  private lock: Promise<unknown> = Promise.resolve();
  private queuedRebalance?: Promise<void>;
  private timer?: NodeJS.Timeout;

  constructor(budgetBytes: number) {
    this.budget = validateBudget(budgetBytes);
  }

  get budgetBytes(): number {
    return this.budget;
  }

  /** Changes the budget; volumes are resized to fit (never below what they hold). */
  configure(budgetBytes: number): Promise<void> {
    this.budget = validateBudget(budgetBytes);
    return this.rebalance();
  }

  snapshot(): DataBudgetSnapshot {
    return {
      budgetBytes: this.budget,
      volumes: this.live().length,
      demandBytes: this.demandBytes(),
      committedBytes: this.committedBytes(),
    };
  }

  /**
   * A place for a new volume of `dataBytes`; its `sizeBytes` is what to mount
   * it with. Throws ResourceExhaustedError when too little of the budget is left.
   */
  lease(dataBytes: number): Promise<DataLease> {
    return this.exclusive(async () => {
      const lease = new DataLease(this, floorToPage(dataBytes));
      if (this.demandBytes() + lease.dataBytes <= this.budget) {
        // Everything fits: no measuring, no resizing.
        lease.sizeBytes = lease.dataBytes;
      } else {
        lease.sizeBytes = this.takeUncommittedRoom(lease) ?? (await this.makeRoom(lease));
      }
      this.leases.add(lease);
      this.updateTimer();
      return lease;
    });
  }

  /**
   * The newcomer's share when the room no volume holds is enough for it (and
   * for the minimum a new volume needs), else undefined. Files never occupy
   * more than their volume's size, so that much is surely free: no measuring,
   * no resizing. Its share is planned from what the files held when last measured.
   */
  private takeUncommittedRoom(lease: DataLease): number | undefined {
    const others = this.live();
    const demands = others.map((other) => ({ dataBytes: other.dataBytes, usedBytes: other.measuredBytes ?? 0 }));
    const share = planDataSizes([...demands, { dataBytes: lease.dataBytes, usedBytes: 0 }], this.budget)[others.length];
    const room = this.budget - this.committedBytes();
    const needed = Math.max(share as number, Math.min(lease.dataBytes, MINIMUM_NEW_VOLUME_BYTES));
    return room >= needed ? floorToPage(share as number) : undefined;
  }

  /**
   * Shrinks the other volumes to give the newcomer its share, and as much
   * again for a quarter more arrivals (data-plan.ts), so that the next ones
   * take uncommitted room. Throws when the files leave too little.
   */
  private async makeRoom(lease: DataLease): Promise<number> {
    // Volumes still being mounted cannot be resized yet: wait for them (bounded).
    const pending = this.live().filter((other) => !other.member);
    await waitAtMost(Promise.all(pending.map((other) => other.settled)), PENDING_MOUNT_WAIT_MS);
    const others = this.live();
    const used = await measureVolumes(others);
    const remaining = this.budget - sum(used);
    const minimum = Math.min(lease.dataBytes, MINIMUM_NEW_VOLUME_BYTES);
    if (remaining < minimum) throw this.exhausted(sum(used));
    const demands = others.map((other, index) => ({ dataBytes: other.dataBytes, usedBytes: used[index] as number }));
    const share = planDataSizes([...demands, { dataBytes: lease.dataBytes, usedBytes: 0 }], this.budget)[
      others.length
    ] as number;
    await shrinkVolumes(others, plannedWithReserve(demands, this.budget, lease.dataBytes));
    const size = floorToPage(Math.min(share, this.budget - this.committedBytes()));
    if (size < MINIMUM_SHARE_BYTES) {
      // Others could not give enough back (their files grew meanwhile).
      await this.rebalanceLocked();
      throw this.exhausted(sum(await measureVolumes(this.live())));
    }
    return size;
  }

  /** Whether the volumes' `dataBytes` together exceed the budget, so that they share it. */
  get isShared(): boolean {
    return this.demandBytes() > this.budget;
  }

  /** @internal DataLease.release */
  releaseLease(lease: DataLease): Promise<void> {
    return this.exclusive(async () => {
      this.leases.delete(lease);
      // Volumes shrunk to share the budget grow back (no work when none was shrunk).
      await this.rebalanceLocked();
    });
  }

  /** Recomputes every volume's size; calls made while one waits to run share it. */
  rebalance(): Promise<void> {
    if (this.queuedRebalance) return this.queuedRebalance;
    const run = this.exclusive(async () => {
      this.queuedRebalance = undefined;
      await this.rebalanceLocked();
    });
    this.queuedRebalance = run;
    return run;
  }

  /**
   * Grows the volumes that need it (data-plan.ts: growthWanted), shrinking
   * others towards their plan only when the room left is not enough for that
   * (or the budget was lowered below what is committed).
   */
  private async rebalanceLocked(): Promise<void> {
    const leases = this.live();
    const shared = this.isShared;
    const used = shared ? await measureVolumes(leases) : leases.map(() => 0);
    const demands = leases.map((lease, index) => ({ dataBytes: lease.dataBytes, usedBytes: used[index] as number }));
    const plan = planDataSizes(demands, this.budget);
    const wantsToGrow = leases.map(
      (lease, index) =>
        lease.member !== undefined &&
        growthWanted(
          { ...(demands[index] as VolumeDemand), sizeBytes: lease.sizeBytes },
          plan[index] as number,
          shared,
        ),
    );
    const indices = leases.map((_, index) => index);
    const growing = indices.filter((index) => wantsToGrow[index]);
    const staying = indices.filter((index) => !wantsToGrow[index]);
    const wanted = sum(growing.map((index) => (plan[index] as number) - (leases[index] as DataLease).sizeBytes));
    if (wanted > this.budget - this.committedBytes()) {
      await shrinkVolumes(
        staying.map((index) => leases[index] as DataLease),
        staying.map((index) => plan[index] as number),
      );
    }
    await growVolumes(
      growing.map((index) => leases[index] as DataLease),
      growing.map((index) => plan[index] as number),
      this.budget - this.committedBytes(),
    );
    this.updateTimer();
  }

  private demandBytes(): number {
    return sum(this.live().map((lease) => lease.dataBytes));
  }

  private committedBytes(): number {
    return sum([...this.leases].map((lease) => lease.sizeBytes));
  }

  /** Leases not given back: one being released is leaving (its mount may still be there, so it stays committed). */
  private live(): DataLease[] {
    return [...this.leases].filter((lease) => !lease.isReleased);
  }

  private updateTimer(): void {
    const shared = this.isShared;
    if (shared && !this.timer) {
      this.timer = setInterval(() => void this.rebalance().catch(() => undefined), REBALANCE_INTERVAL_MS);
      this.timer.unref();
    } else if (!shared && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private exhausted(usedBytes: number): ResourceExhaustedError {
    return new ResourceExhaustedError(
      'data-budget-exhausted',
      `The sessions' files (/mnt/data, kept in memory) already hold ${formatBytes(usedBytes)} of this server's ${formatBytes(this.budget)} data budget, so no new session can start. Remove files, close sessions, or raise ${BUDGET_SETTING}.`,
    );
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const result = this.lock.then(task);
    this.lock = result.catch(() => undefined);
    return result;
  }
}

function validateBudget(budgetBytes: number): number {
  if (!Number.isFinite(budgetBytes) || budgetBytes < MiB) {
    throw new InvalidInputError(`${BUDGET_SETTING} must be a number of bytes of at least ${MiB}; got ${budgetBytes}.`);
  }
  return floorToPage(budgetBytes);
}

/** SANDCELL_DATA_BUDGET_BYTES (a size: `8G`, or bytes), else half of the host's memory. */
export function defaultDataBudgetBytes(environment: Record<string, string | undefined> = process.env): number {
  const raw = environment.SANDCELL_DATA_BUDGET_BYTES;
  if (raw !== undefined && raw.trim() !== '') {
    const bytes = parseSize(raw);
    if (bytes === undefined) {
      throw new InvalidInputError(
        `SANDCELL_DATA_BUDGET_BYTES takes a size such as 8G or 512M (a bare number is bytes); got ${JSON.stringify(raw)}.`,
      );
    }
    return validateBudget(bytes);
  }
  return floorToPage(os.totalmem() * DEFAULT_DATA_BUDGET_SHARE);
}

let shared: DataBudget | undefined;

/** The budget every volume of this process draws from (created on first use with the default). */
export function sharedDataBudget(): DataBudget {
  shared ??= new DataBudget(defaultDataBudgetBytes());
  return shared;
}

async function waitAtMost(promise: Promise<unknown>, milliseconds: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, milliseconds)))]);
  clearTimeout(timer);
}
