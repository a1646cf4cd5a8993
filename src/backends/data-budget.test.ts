import { describe, expect, it } from 'vitest';
import { ResourceExhaustedError } from '../errors.js';
import { DataBudget, type DataBudgetMember, type DataLease, planDataSizes } from './data-budget.js';

const MiB = 1024 * 1024;

describe('planDataSizes', () => {
  it('gives every volume its dataBytes while they fit in the budget', () => {
    const volumes = [
      { dataBytes: 32 * MiB, usedBytes: 30 * MiB },
      { dataBytes: 16 * MiB, usedBytes: 0 },
    ];
    expect(planDataSizes(volumes, 48 * MiB)).toEqual([32 * MiB, 16 * MiB]);
  });

  it('past the budget, gives each what it holds plus an equal share of what is left', () => {
    const volumes = [
      { dataBytes: 32 * MiB, usedBytes: 0 },
      { dataBytes: 32 * MiB, usedBytes: 0 },
    ];
    expect(planDataSizes(volumes, 48 * MiB)).toEqual([24 * MiB, 24 * MiB]);
  });

  it('leaves what a nearly full volume cannot use to the others', () => {
    const volumes = [
      { dataBytes: 32 * MiB, usedBytes: 30 * MiB },
      { dataBytes: 32 * MiB, usedBytes: 0 },
    ];
    expect(planDataSizes(volumes, 48 * MiB)).toEqual([32 * MiB, 16 * MiB]);
  });

  it('never adds up to more than the budget, and never goes below what a volume holds', () => {
    const volumes = [
      { dataBytes: 100 * MiB, usedBytes: 10 * MiB + 4096 },
      { dataBytes: 7 * MiB, usedBytes: 3 * MiB },
      { dataBytes: 64 * MiB, usedBytes: 0 },
      { dataBytes: 64 * MiB, usedBytes: 63 * MiB },
    ];
    const sizes = planDataSizes(volumes, 101 * MiB + 12_288);
    expect(sizes.reduce((total, size) => total + size, 0)).toBeLessThanOrEqual(101 * MiB + 12_288);
    expect(sizes[2]).toBeGreaterThan(0);
    sizes.forEach((size, index) => {
      expect(size).toBeGreaterThanOrEqual(volumes[index]?.usedBytes as number);
      expect(size).toBeLessThanOrEqual(volumes[index]?.dataBytes as number);
      expect(size % 4096).toBe(0);
    });
  });

  it('never plans a size of zero, which tmpfs would take as no limit at all', () => {
    const volumes = [
      { dataBytes: 48 * MiB, usedBytes: 48 * MiB },
      { dataBytes: 32 * MiB, usedBytes: 0 },
    ];
    expect(planDataSizes(volumes, 48 * MiB)[1]).toBe(4096);
  });

  it('keeps what the files hold when they alone exceed the budget', () => {
    const volumes = [
      { dataBytes: 32 * MiB, usedBytes: 30 * MiB },
      { dataBytes: 32 * MiB, usedBytes: 30 * MiB },
    ];
    expect(planDataSizes(volumes, 48 * MiB)).toEqual([30 * MiB, 30 * MiB]);
  });
});

/** A tmpfs as the budget sees one: files that occupy bytes, a size that cannot go below them. */
class FakeTmpfs implements DataBudgetMember {
  used = 0;
  constructor(public size: number) {}
  async usedBytes() {
    return this.used;
  }
  async resize(size: number) {
    if (size < this.used) throw new Error('EINVAL');
    this.size = size;
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
});
