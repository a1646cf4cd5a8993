import { describe, expect, it } from 'vitest';
import { ResourceExhaustedError } from '../errors.js';
import { DataBudget, type DataBudgetMember, type DataLease, defaultDataBudgetBytes } from './data-budget.js';
import { planDataSizes } from './data-plan.js';

const MiB = 1024 * 1024;

/** A tmpfs as the budget sees one: files that occupy bytes, a size that cannot go below them. */
class FakeTmpfs implements DataBudgetMember {
  used = 0;
  /** Remounts so far: each is a `mount` process and a pass over the mount table. */
  resizes = 0;
  constructor(public size: number) {}
  async usedBytes() {
    return this.used;
  }
  async resize(size: number) {
    if (size < this.used) throw new Error('EINVAL');
    this.size = size;
    this.resizes++;
  }
}

async function mount(budget: DataBudget, dataBytes: number): Promise<FakeTmpfs> {
  const lease = await budget.lease(dataBytes);
  const tmpfs = new FakeTmpfs(lease.sizeBytes);
  lease.attach(tmpfs);
  return Object.assign(tmpfs, { lease });
}

describe('DataBudget', () => {
  it('shares the budget as volumes come and go, never exceeding it, and refuses a volume once too little is left', async () => {
    const budget = new DataBudget(48 * MiB);
    const a = (await mount(budget, 32 * MiB)) as FakeTmpfs & { lease: Awaited<ReturnType<DataBudget['lease']>> };
    expect(a.size).toBe(32 * MiB);
    a.used = 30 * MiB;
    const b = (await mount(budget, 32 * MiB)) as typeof a;
    expect([a.size, b.size]).toEqual([32 * MiB, 16 * MiB]);
    b.used = 16 * MiB;
    await expect(budget.lease(32 * MiB)).rejects.toBeInstanceOf(ResourceExhaustedError);
    await expect(budget.lease(32 * MiB)).rejects.toThrow(/data budget.*SANDCELL_DATA_BUDGET_BYTES/);
    // A removes its files: B gets room again once A's execution ends.
    a.used = 0;
    await a.lease.usageChanged();
    expect(a.size + b.size).toBeLessThanOrEqual(48 * MiB);
    expect(b.size).toBeGreaterThan(31 * MiB);
    // A closes: B keeps everything it may have.
    await a.lease.release();
    expect(b.size).toBe(32 * MiB);
    expect(budget.snapshot()).toMatchObject({ volumes: 1, committedBytes: 32 * MiB });
  });

  it('keeps admitting empty volumes while shares stay above the minimum, however little each share shrinks', async () => {
    // 1 GiB among empty volumes of 1 GiB each: the 33rd means shrinking each of 32 by under a MiB.
    const budget = new DataBudget(1024 * MiB);
    const volumes: FakeTmpfs[] = [];
    for (let count = 0; count < 40; count++) volumes.push(await mount(budget, 1024 * MiB));
    expect(volumes.reduce((total, volume) => total + volume.size, 0)).toBeLessThanOrEqual(1024 * MiB);
    expect(Math.min(...volumes.map((volume) => volume.size))).toBeGreaterThanOrEqual(16 * MiB);
  });

  it('waits for volumes still being mounted rather than counting them as full', async () => {
    const budget = new DataBudget(48 * MiB);
    const first = await budget.lease(32 * MiB);
    const second = budget.lease(32 * MiB);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const tmpfs = new FakeTmpfs(first.sizeBytes);
    first.attach(tmpfs);
    expect((await second).sizeBytes).toBeGreaterThan(23 * MiB);
    expect(tmpfs.size + (await second).sizeBytes).toBeLessThanOrEqual(48 * MiB);
  });

  it('does nothing but count while every volume fits', async () => {
    const budget = new DataBudget(100 * MiB);
    const volumes = [await mount(budget, 32 * MiB), await mount(budget, 32 * MiB), await mount(budget, 32 * MiB)];
    for (const volume of volumes) volume.resize = () => Promise.reject(new Error('no resize expected'));
    expect(volumes.map((volume) => volume.size)).toEqual([32 * MiB, 32 * MiB, 32 * MiB]);
    for (const volume of volumes) await (volume as FakeTmpfs & { lease: DataLease }).lease.usageChanged();
  });

  it('admits a burst of new volumes with a few resizes each, every one keeping most of its fair share', async () => {
    // 200 sessions starting on a budget their dataBytes exceed 50 times over: resizing every volume for
    // every newcomer would take about 20,000 remounts.
    const budget = new DataBudget(4096 * MiB);
    const volumes: FakeTmpfs[] = [];
    for (let count = 0; count < 200; count++) volumes.push(await mount(budget, 1024 * MiB));
    const sizes = volumes.map((volume) => volume.size);
    expect(sizes.reduce((total, size) => total + size, 0)).toBeLessThanOrEqual(4096 * MiB);
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(0.75 * ((4096 * MiB) / 200));
    expect(volumes.reduce((total, volume) => total + volume.resizes, 0)).toBeLessThan(5 * 200);
  });

  it('leaves idle volumes alone when it rebalances, and grows the one whose files need room', async () => {
    const budget = new DataBudget(100 * MiB);
    const volumes: FakeTmpfs[] = [];
    for (let count = 0; count < 5; count++) volumes.push(await mount(budget, 64 * MiB));
    const writer = volumes[0] as FakeTmpfs & { lease: DataLease };
    const resizesBefore = volumes.map((volume) => volume.resizes);
    await budget.rebalance();
    expect(volumes.map((volume) => volume.resizes)).toEqual(resizesBefore);
    // The writer fills most of its volume: its next execution's end gives it its fair share.
    writer.used = writer.size - MiB;
    await writer.lease.usageChanged();
    const due = planDataSizes(
      volumes.map((volume) => ({ dataBytes: 64 * MiB, usedBytes: volume.used })),
      100 * MiB,
    );
    expect(writer.size).toBe(due[0]);
    expect(volumes.reduce((total, volume) => total + volume.size, 0)).toBeLessThanOrEqual(100 * MiB);
  });
});

describe('SANDCELL_DATA_BUDGET_BYTES', () => {
  it('takes a size as the flags do (8G, 512M), or bytes', () => {
    expect(defaultDataBudgetBytes({ SANDCELL_DATA_BUDGET_BYTES: '512M' })).toBe(512 * MiB);
    expect(defaultDataBudgetBytes({ SANDCELL_DATA_BUDGET_BYTES: String(64 * MiB) })).toBe(64 * MiB);
    expect(() => defaultDataBudgetBytes({ SANDCELL_DATA_BUDGET_BYTES: 'lots' })).toThrow(
      'SANDCELL_DATA_BUDGET_BYTES takes a size such as 8G or 512M (a bare number is bytes); got "lots".',
    );
  });
});
