import { describe, expect, it } from 'vitest';
import { growthWanted, planDataSizes, plannedWithReserve } from './data-plan.js';

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

describe('plannedWithReserve', () => {
  it('shrinks every volume further, as if a quarter more empty volumes were coming', () => {
    const volumes = Array.from({ length: 8 }, () => ({ dataBytes: 1024 * MiB, usedBytes: 0 }));
    expect(plannedWithReserve(volumes, 1000 * MiB, 1024 * MiB)).toEqual(Array(8).fill(100 * MiB));
    expect(planDataSizes(volumes, 1000 * MiB)).toEqual(Array(8).fill(125 * MiB));
  });

  it('sets room aside for at least one arrival, and never takes what a volume holds', () => {
    const volumes = [{ dataBytes: 32 * MiB, usedBytes: 30 * MiB }];
    expect(plannedWithReserve(volumes, 48 * MiB, 32 * MiB)).toEqual([32 * MiB]);
    expect(plannedWithReserve([{ dataBytes: 64 * MiB, usedBytes: 0 }], 48 * MiB, 64 * MiB)).toEqual([24 * MiB]);
  });
});

describe('growthWanted', () => {
  const volume = { dataBytes: 64 * MiB, sizeBytes: 20 * MiB };

  it('while volumes share the budget, grows only a volume whose files use half the room it is due', () => {
    expect(growthWanted({ ...volume, usedBytes: 0 }, 32 * MiB, true)).toBe(false);
    expect(growthWanted({ ...volume, usedBytes: 8 * MiB }, 32 * MiB, true)).toBe(false);
    expect(growthWanted({ ...volume, usedBytes: 9 * MiB }, 32 * MiB, true)).toBe(true);
  });

  it('without sharing, gives every volume its dataBytes at once', () => {
    expect(growthWanted({ ...volume, usedBytes: 0 }, 64 * MiB, false)).toBe(true);
  });

  it('skips grows under a MiB, except the last step up to dataBytes', () => {
    expect(growthWanted({ ...volume, usedBytes: 19 * MiB }, 20 * MiB + 4096, true)).toBe(false);
    expect(
      growthWanted({ dataBytes: 20 * MiB + 4096, sizeBytes: 20 * MiB, usedBytes: 20 * MiB }, 20 * MiB + 4096, true),
    ).toBe(true);
    expect(growthWanted({ ...volume, usedBytes: 0 }, 16 * MiB, true)).toBe(false);
  });
});
