#!/usr/bin/env node
// `npm test`: the unit project first, its files in parallel (they run no
// sandbox: scripted kernels, servers on port 0, nothing shared), then the
// integration project one file at a time (real sandboxes on a 2-core machine
// shared with other work). vitest cannot give two projects of one run
// different parallelism, hence two runs. The unit run takes every core
// (`--maxWorkers=100%`): vitest's default leaves one free, which on two cores
// is no parallelism at all. Both always run; the exit code is non-zero when
// either failed. Extra arguments go to both (`npm test -- -t 'queue'`); a
// project with no file matching them passes.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { root } from './setup-common.mjs';

const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
const extra = process.argv.slice(2);
let failed = false;
for (const project of [
  ['--project', 'unit', '--file-parallelism', '--maxWorkers=100%'],
  ['--project', 'integration'],
]) {
  const result = spawnSync(process.execPath, [vitest, 'run', ...project, '--passWithNoTests', ...extra], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
