import { defineConfig } from 'vitest/config';

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
          // Servers the tests start keep conversations in memory unless a test gives them a state directory.
          env: { SANDCELL_STATE_DIR: 'none' },
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
          env: { SANDCELL_STATE_DIR: 'none' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
