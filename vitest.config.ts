import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

// Servers the tests start keep conversations in memory unless a test gives them a state directory, and
// see no environments unless a test builds into a store of its own: what the machine's user has built
// (or the bench) is not theirs to list.
const env = {
  SANDCELL_STATE_DIR: 'none',
  SANDCELL_ENVIRONMENT_DIR: path.join(os.tmpdir(), 'sandcell-tests-no-environments'),
};

export default defineConfig({
  test: {
    // Real sandboxes on a 2-core machine: one file at a time keeps timings honest. The unit project
    // runs none, so `npm test` (scripts/test.mjs) and `npm run test:unit` run its files in parallel.
    fileParallelism: false,
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          environment: 'node',
          env,
          // Scripted servers start in milliseconds; the margin is for files run in parallel on a busy machine.
          testTimeout: 20_000,
          hookTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          environment: 'node',
          env,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
