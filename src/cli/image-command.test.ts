import { afterEach, describe, expect, it, vi } from 'vitest';
import { progressReporter } from './image-command.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a build's progress, written to a log (not a terminal)", () => {
  it("shows one line per stage, and every line of a setup command's own output as it comes", () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    const progress = progressReporter(false, { title: 'building the environment', prefix: 'env' });
    progress.report({ stage: 'installing Debian packages' });
    progress.report({ stage: 'installing Debian packages', detail: 'Reading package lists...' });
    progress.report({ stage: 'setup command 1 of 1' });
    progress.report({ stage: 'setup command 1 of 1', detail: 'compiling', output: 'compiling' });
    progress.report({ stage: 'setup command 1 of 1', detail: 'compiling', output: 'compiling' });
    progress.stop();
    expect(written.join('')).toBe(
      'env: installing Debian packages\nenv: setup command 1 of 1\nenv:   compiling\nenv:   compiling\n',
    );
  });
});
