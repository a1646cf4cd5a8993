// gVisor's bench rows beside bubblewrap's, in one run (alone: `node bench/gvisor.mjs [--quick]`, after
// `npm run build`): pause and resume of a small session and of one holding a 100 MB DataFrame, the
// resume measured to the first result of code that reads it back, into a warm session (as a server
// resumes) and with a cold start (resumeSession). On gVisor each snapshot is a checkpoint of the whole
// sandbox; on bubblewrap each kernel's saved state. The per-backend rows (starts, round trips, memory,
// parallel load) are bench/run.mjs's, with gVisor as a column there.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBackend, openSnapshotStore } from '../dist/index.js';
import { percentile } from './server.mjs';
import { CHECK_LARGE, LARGE, pauseAndResume } from './snapshots.mjs';

const round = (value, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
const p50 = (values) => (values.length === 0 ? undefined : round(percentile(values, 0.5)));

export async function runGvisorSnapshotBench({ quick }) {
  const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-gvisor-'));
  const measured = {};
  try {
    const store = await openSnapshotStore(stateDirectory);
    for (const name of ['bubblewrap', 'gvisor']) {
      const backend = createBackend(name);
      await backend.ensureAvailable();
      const small = await pauseAndResume(backend, store, 'x = 41', 'x + 1', '42', quick ? 1 : 3);
      await small.session.close();
      const large = await pauseAndResume(backend, store, LARGE, CHECK_LARGE, 'True', quick ? 1 : 2);
      await large.session.close();
      measured[name] = { small, large };
    }
  } finally {
    rmSync(stateDirectory, { recursive: true, force: true });
  }
  const each = (pick) => Object.fromEntries(Object.entries(measured).map(([name, value]) => [name, pick(value)]));
  const rows = [
    ['small session: pause (gVisor: a checkpoint)', 'p50', each((m) => p50(m.small.pauses)), 'ms'],
    ['small session: resume → first result (warm session)', 'p50', each((m) => p50(m.small.warmResumes)), 'ms'],
    ['small session: snapshot size', 'bytes', each((m) => m.small.bytes), 'B'],
    ['100 MB DataFrame: pause (gVisor: a checkpoint)', 'p50', each((m) => p50(m.large.pauses)), 'ms'],
    ['100 MB DataFrame: resume → first result (warm session)', 'p50', each((m) => p50(m.large.warmResumes)), 'ms'],
    ['100 MB DataFrame: resume → first result (cold start)', 'p50', each((m) => p50(m.large.coldResumes)), 'ms'],
    ['100 MB DataFrame: snapshot size', 'bytes', each((m) => m.large.bytes), 'B'],
  ];
  const result = each((m) => ({
    small: { pauseMs: m.small.pauses, resumeIntoWarmMs: m.small.warmResumes, bytes: m.small.bytes },
    large: {
      pauseMs: m.large.pauses,
      resumeIntoWarmMs: m.large.warmResumes,
      resumeColdMs: m.large.coldResumes,
      bytes: m.large.bytes,
    },
  }));
  return { rows, result };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows } = await runGvisorSnapshotBench({ quick: process.argv.includes('--quick') });
  for (const [name, stat, byBackend, unit] of rows) {
    console.log(`${name} | ${stat} | bubblewrap ${byBackend.bubblewrap} | gvisor ${byBackend.gvisor} ${unit}`);
  }
}
