import { describe, expect, it } from 'vitest';
import { kernelFiles, SUPERVISOR_SCRIPT } from './index.js';

describe('the kernel files', () => {
  it('are the supervisor, the Python kernel and their modules, sorted, and nothing of the host side', () => {
    const files = kernelFiles();
    for (const name of [SUPERVISOR_SCRIPT, 'sandcell_kernel.py', 'sandcell_files.py', 'sandcell_routes.py']) {
      expect(files).toContain(name);
    }
    expect(files).toEqual([...files].sort());
    expect(files.every((name) => /^sandcell_\w+\.(py|mjs|R)$/.test(name))).toBe(true);
  });
});
