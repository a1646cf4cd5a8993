import { describe, expect, it } from 'vitest';
import { ForkTemplate } from './fork-template.js';
import { isRoot } from './host-setup.js';

const needsRoot = { mode: 'exec', reason: "forking needs root (each fork becomes its session's own host uid)" };

describe('whether a start forks, as doctor reports it', () => {
  it('execs when asked to, whoever runs it', () => {
    expect(new ForkTemplate({ start: 'exec' }).startPath()).toEqual({ mode: 'exec', reason: 'SANDCELL_START=exec' });
  });

  it('forks as root until a fork fails in auto, then execs and says why', () => {
    const template = new ForkTemplate({ start: 'auto' });
    expect(template.startPath()).toEqual(isRoot() ? { mode: 'fork' } : needsRoot);
    template.giveUp('a forked session could not start: the template went away');
    expect(template.startPath()).toEqual(
      isRoot() ? { mode: 'exec', reason: 'a forked session could not start: the template went away' } : needsRoot,
    );
  });
});
