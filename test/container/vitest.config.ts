// The tests test/container-image.test.ts runs inside sandcell's container, not on the host: the
// checkout is mounted read-only at /src, so vitest keeps its cache in /tmp.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  cacheDir: '/tmp/vitest-cache',
  test: {
    include: ['test/container/*.contract.ts'],
    environment: 'node',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
