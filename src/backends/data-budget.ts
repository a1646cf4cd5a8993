/**
 * The server-wide bound on RAM that cannot be reclaimed. Every session's
 * /mnt/data is its own tmpfs, whose pages stay in memory until the files are
 * removed, whatever happens to the kernels. The sizes of those mounts are
 * kept so that together they never exceed the budget (a hard bound, with no
 * tmpfs quotas needed): while the sessions' `dataBytes` fit, each volume has
 * all of its own and nothing is measured; past that, each volume is resized
 * (`mount -o remount,size=`) to what it holds plus a fair share of what is
 * left, so a session writing past its share meets a full disk (ENOSPC), and a
 * new volume is refused once too little is left.
 */
import os from 'node:os';
import { InvalidInputError, ResourceExhaustedError } from '../errors.js';
import { floorToPage, PAGE_BYTES } from './tmpfs.js';

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
/** Smaller grows of a volume are not worth a remount (shrinks the plan needs always happen). */
const RESIZE_STEP_BYTES = MiB;
/** A shrink fails when the files grew meanwhile; measure again this many times. */
const SHRINK_ATTEMPTS = 3;
const BUDGET_SETTING =
  'the data budget (`dataBudgetBytes`, `sandcell serve --data-budget-bytes`, env SANDCELL_DATA_BUDGET_BYTES)';

/** A mounted volume the budget can measure and resize. */
export interface DataBudgetMember {
  usedBytes(): Promise<number>;
  /** Rejects when the files already occupy more than `sizeBytes`. */
  resize(sizeBytes: number): Promise<void>;
}

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
   * The files may have changed (an execution ended): when volumes share the
   * budget and these files grew or shrank noticeably, recompute the shares
   * now rather than at the next tick. Otherwise one statfs, or nothing.
   */
  async usageChanged(): Promise<void> {
    if (this.released || !this.member || !this.budget.isShared) return;
    const used = await this.member.usedBytes().catch(() => undefined);
    if (used === undefined) return;
    if (this.measuredBytes !== undefined && Math.abs(used - this.measuredBytes) < RESIZE_STEP_BYTES) return;
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
        this.leases.add(lease);
        return lease;
      }
      // Volumes still being mounted cannot be resized yet: wait for them (bounded).
      const pending = this.live().filter((other) => !other.member);
      await waitAtMost(Promise.all(pending.map((other) => other.settled)), PENDING_MOUNT_WAIT_MS);
      const others = this.live();
      const used = await this.measure(others);
      const remaining = this.budget - sum(used);
      const minimum = Math.min(lease.dataBytes, MINIMUM_NEW_VOLUME_BYTES);
      if (remaining < minimum) throw this.exhausted(sum(used));
      const plan = planDataSizes(
        [
          ...others.map((other, index) => ({ dataBytes: other.dataBytes, usedBytes: used[index] as number })),
          { dataBytes: lease.dataBytes, usedBytes: 0 },
        ],
        this.budget,
      );
      await this.shrink(others, plan);
      lease.sizeBytes = floorToPage(Math.min(plan[others.length] as number, this.budget - this.committedBytes()));
      if (lease.sizeBytes < MINIMUM_SHARE_BYTES) {
        // Others could not give enough back (their files grew meanwhile).
        await this.rebalanceLocked();
        throw this.exhausted(sum(await this.measure(this.live())));
      }
      this.leases.add(lease);
      await this.grow(others, plan);
      this.updateTimer();
      return lease;
    });
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

  private async rebalanceLocked(): Promise<void> {
    const leases = this.live();
    const used = this.isShared ? await this.measure(leases) : leases.map(() => 0);
    const plan = planDataSizes(
      leases.map((lease, index) => ({ dataBytes: lease.dataBytes, usedBytes: used[index] as number })),
      this.budget,
    );
    await this.shrink(leases, plan);
    await this.grow(leases, plan);
    this.updateTimer();
  }

  /** Shrinks first, so that growing never takes the sum over the budget. */
  private async shrink(leases: DataLease[], plan: number[]): Promise<void> {
    for (const [index, lease] of leases.entries()) {
      const target = plan[index] as number;
      // Every shrink the plan asks for happens, however small: with many volumes, the room a new one
      // gets is the sum of many sub-MiB shrinks (only grows are skipped below RESIZE_STEP_BYTES).
      if (!lease.member || lease.sizeBytes <= target) continue;
      for (let attempt = 0; attempt < SHRINK_ATTEMPTS; attempt++) {
        const size = Math.max(target, await lease.member.usedBytes().catch(() => lease.sizeBytes));
        if (size >= lease.sizeBytes) break;
        try {
          await lease.member.resize(size);
          lease.sizeBytes = size;
          break;
        } catch {
          // The files grew past the target meanwhile: measure again.
        }
      }
    }
  }

  private async grow(leases: DataLease[], plan: number[]): Promise<void> {
    for (const [index, lease] of leases.entries()) {
      if (!lease.member) continue;
      const room = this.budget - this.committedBytes();
      const size = floorToPage(Math.min(plan[index] as number, lease.sizeBytes + room));
      const worthIt =
        size - lease.sizeBytes >= RESIZE_STEP_BYTES || (size > lease.sizeBytes && size === lease.dataBytes);
      if (!worthIt) continue;
      try {
        await lease.member.resize(size);
        lease.sizeBytes = size;
      } catch {
        // Unmounted meanwhile (being disposed of): its lease goes soon.
      }
    }
  }

  /** What each volume's files occupy; a volume not mounted yet counts as full. */
  private measure(leases: DataLease[]): Promise<number[]> {
    return Promise.all(
      leases.map(async (lease) => {
        if (!lease.member) return lease.sizeBytes;
        const used = await lease.member.usedBytes().catch(() => lease.sizeBytes);
        lease.measuredBytes = used;
        return used;
      }),
    );
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
      `The sessions' files (/mnt/data, kept in memory) already hold ${formatMiB(usedBytes)} of this server's ${formatMiB(this.budget)} data budget, so no new session can start. Remove files, close sessions, or raise ${BUDGET_SETTING}.`,
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

/** SANDCELL_DATA_BUDGET_BYTES, else half of the host's memory. */
export function defaultDataBudgetBytes(environment: Record<string, string | undefined> = process.env): number {
  const raw = environment.SANDCELL_DATA_BUDGET_BYTES;
  if (raw !== undefined && raw.trim() !== '') return validateBudget(Number(raw));
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

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function formatMiB(bytes: number): string {
  return `${(bytes / MiB).toFixed(bytes % MiB === 0 ? 0 : 1)} MiB`;
}
