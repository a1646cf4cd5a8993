#!/usr/bin/env node
// `npm test`: the unit project first, its files in parallel on every core (they
// run no sandbox: scripted kernels, servers on port 0, nothing shared); then
// the integration project, SANDCELL_TEST_WORKERS files at a time (default 1:
// on this project's 2-core machine two at a time took longer, 2,495 s for the
// whole CI against 2,136 s one at a time, since real sandboxes keep both cores
// busy; a machine with more cores may set more); then the few integration
// files that need the machine to themselves (`integration-alone` in
// vitest.config.ts), one at a time. vitest cannot give projects of one run
// different parallelism, hence three runs. `--maxWorkers=100%` for the unit
// run: vitest's default leaves one core free, which on two cores is no
// parallelism at all. Every run happens; the exit code is non-zero when any
// failed. Extra arguments go to every run (`npm test -- -t 'queue'`); a project
// with no file matching them passes.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { root } from './setup-common.mjs';

const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
const extra = process.argv.slice(2);
const workers = process.env.SANDCELL_TEST_WORKERS ?? '1';
if (!/^[1-9]\d?$/.test(workers)) {
  process.stderr.write(`SANDCELL_TEST_WORKERS must be a whole number from 1 to 99; got ${JSON.stringify(workers)}.\n`);
  process.exit(2);
}
let failed = false;
for (const project of [
  ['--project', 'unit', '--file-parallelism', '--maxWorkers=100%'],
  ['--project', 'integration', ...(workers === '1' ? [] : ['--file-parallelism', `--maxWorkers=${workers}`])],
  ['--project', 'integration-alone'],
]) {
  const result = spawnSync(process.execPath, [vitest, 'run', ...project, '--passWithNoTests', ...extra], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
