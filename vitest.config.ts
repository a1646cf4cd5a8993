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

/**
 * Integration files that run alone, one at a time after the others, because what they check
 * depends on the machine being otherwise idle:
 * - the pool's files measure the CPU that starts take, and change what they do by it;
 * - sandbox-loss waits on liveness checks paced in seconds;
 * - the data budget's test writes just after another session's files went. Two files at a time on
 *   a machine at load 10, that write still met a full disk once.
 * Every other integration file may run beside others (SANDCELL_TEST_WORKERS, scripts/test.mjs):
 * each starts its own servers on port 0, its own state directories, netns subnets and Docker
 * names, and looks only at processes of its own.
 */
const ALONE = [
  'test/pool-demand.test.ts',
  'test/pool-light-starts.test.ts',
  'test/pool-warm-light.test.ts',
  'test/sandbox-loss.test.ts',
  'test/server-data-budget.test.ts',
];

export default defineConfig({
  test: {
    // One file at a time unless a run says otherwise: `npm test` (scripts/test.mjs) runs the unit
    // files on every core, and the integration files but ALONE SANDCELL_TEST_WORKERS at a time.
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
          exclude: ALONE,
          environment: 'node',
          env,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration-alone',
          include: ALONE,
          environment: 'node',
          env,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
