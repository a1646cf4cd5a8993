import { afterEach, describe, expect, it } from 'vitest';
import { BackendUnavailableError } from '../../errors.js';
import { startMode } from './options.js';

const saved = process.env.SANDCELL_START;
afterEach(() => {
  if (saved === undefined) delete process.env.SANDCELL_START;
  else process.env.SANDCELL_START = saved;
});

describe('how a bubblewrap sandbox starts', () => {
  it('is auto by default, SANDCELL_START otherwise, and the `start` option before either', () => {
    delete process.env.SANDCELL_START;
    expect(startMode({})).toBe('auto');
    process.env.SANDCELL_START = 'exec';
    expect(startMode({})).toBe('exec');
    expect(startMode({ start: 'fork' })).toBe('fork');
  });

  it('refuses anything but auto, fork or exec, saying what fits', () => {
    process.env.SANDCELL_START = 'spawn';
    expect(() => startMode({})).toThrow(BackendUnavailableError);
    expect(() => startMode({})).toThrow('SANDCELL_START must be auto, fork or exec (got "spawn").');
  });
});
