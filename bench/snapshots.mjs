// Snapshots' bench rows (alone: `node bench/snapshots.mjs [--quick]`, after `npm run build`), on bubblewrap,
// against the snapshots issue's targets: pause and resume of an idle small session and of one holding a
// 100 MB DataFrame (resume measured to the first result of code that reads it back, into a warm session as a
// server resumes, and with a cold start as resumeSession does), a fork of the large one beside its resume, the snapshot's size beside the data's, and many paused sessions: the host memory
// they hold once paused (none: no process is left) and a sample of them resumed, each checked.
// Snapshots go to a store in a temporary state directory, removed after.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBackend, openSnapshotStore, resumeSession, Session } from '../dist/index.js';
import { percentile } from './server.mjs';

const now = () => performance.now();
const round = (value, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
const MiB = 1024 * 1024;
/** 100 MB of float64: 1,310,720 rows × 10 columns. */
export const LARGE =
  'import numpy as np, pandas as pd\ndf = pd.DataFrame(np.random.default_rng(7).random((1_310_720, 10)))\nexpected = float(df.values.sum())';
export const CHECK_LARGE = 'float(df.values.sum()) == expected';

/**
 * What sessions hold on the host outside this process, that a paused one must not: sandbox
 * processes, and shared memory (their /mnt/data and /tmp are tmpfs, counted as Shmem). The host's
 * "available" memory is not used: page cache freed or filled by the snapshots' own files moves it
 * by hundreds of MiB either way.
 */
function sandboxFootprint() {
  const meminfo = readFileSync('/proc/meminfo', 'utf8');
  const shmemKiB = Number(/^Shmem:\s+(\d+)/m.exec(meminfo)?.[1] ?? 0);
  let processes = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'bwrap') processes++;
    } catch {
      // Gone meanwhile.
    }
  }
  return { processes, shmemMiB: shmemKiB / 1024, rssMiB: process.memoryUsage().rss / MiB };
}

async function timed(work) {
  const started = now();
  const value = await work();
  return { ms: now() - started, value };
}

function check(condition, what) {
  if (!condition) throw new Error(`snapshot bench: ${what}`);
}

/**
 * Pause, then resume to the first result, `samples` times, alternating where it resumes: into a
 * warm session made beforehand (what a server does, from its pool) and into a new one
 * (resumeSession, a cold start included). Sizes of the snapshot.
 */
export async function pauseAndResume(backend, store, setup, probe, expected, samples) {
  const options = { backend, snapshots: store, preloadModules: ['numpy', 'pandas'] };
  const pauses = [];
  const warmResumes = [];
  const coldResumes = [];
  let bytes = 0;
  let session = await Session.create(options);
  const ran = await session.run(setup);
  check(ran.status === 'ok', `setup failed: ${ran.error?.value ?? ran.stderr}`);
  for (let index = 0; index < samples * 2; index++) {
    const paused = await timed(() => session.pause());
    pauses.push(paused.ms);
    bytes = paused.value.bytes;
    const warm = index % 2 === 0 ? await Session.create(options) : undefined;
    const resumed = await timed(async () => {
      let next = warm;
      if (next) await next.load(paused.value.id);
      else next = await resumeSession(paused.value.id, options);
      const execution = await next.run(probe);
      return { next, execution };
    });
    check(
      resumed.value.execution.results[0]?.data['text/plain'] === expected,
      `resumed session answered ${JSON.stringify(resumed.value.execution.results[0]?.data)} ${resumed.value.execution.error?.value ?? ''}`,
    );
    (warm ? warmResumes : coldResumes).push(resumed.ms);
    session = resumed.value.next;
  }
  return { pauses, warmResumes, coldResumes, bytes, session };
}

export async function runSnapshotBench({ quick }) {
  const backend = createBackend('bubblewrap');
  const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-snapshots-'));
  const rows = [];
  const result = {};
  try {
    await backend.ensureAvailable();
    const store = await openSnapshotStore(stateDirectory);
    const small = await pauseAndResume(backend, store, 'x = 41', 'x + 1', '42', quick ? 2 : 5);
    await small.session.close();
    const large = await pauseAndResume(backend, store, LARGE, CHECK_LARGE, 'True', quick ? 1 : 3);
    const dataBytes = 1_310_720 * 10 * 8;
    // Into a warm session, as a server forks (its pool's), beside the warm resume.
    const forks = [];
    for (let index = 0; index < (quick ? 2 : 5); index++) {
      const fork = await Session.create({ backend, preloadModules: ['numpy', 'pandas'] });
      const forked = await timed(async () => {
        await large.session.forkInto(fork);
        return fork.run(CHECK_LARGE);
      });
      check(forked.value.results[0]?.data['text/plain'] === 'True', 'the fork lost its DataFrame');
      forks.push(forked.ms);
      await fork.close();
    }
    await large.session.close();

    // Many paused sessions: made four at a time (a cold start each), each paused; then a sample resumed.
    const count = quick ? 40 : 1000;
    const before = sandboxFootprint();
    const paused = [];
    const makeOne = async (index) => {
      const session = await Session.create({ backend, snapshots: store, preloadModules: [] });
      await session.run(`n = ${index}`);
      paused.push({ index, id: (await session.pause()).id });
      // pause() resolves once the snapshot is written; the sandbox's teardown is waited for here.
      await session.close();
    };
    const started = now();
    for (let next = 0; next < count; next += 4) {
      await Promise.all([0, 1, 2, 3].filter((offset) => next + offset < count).map((offset) => makeOne(next + offset)));
    }
    const madeSeconds = (now() - started) / 1000;
    const after = sandboxFootprint();
    const sample = paused.filter((_, position) => position % Math.max(1, Math.floor(count / 20)) === 0);
    for (const { index, id } of sample) {
      const session = await resumeSession(id, { backend, snapshots: store, preloadModules: [] });
      const execution = await session.run('n');
      check(execution.results[0]?.data['text/plain'] === String(index), `paused session ${index} came back wrong`);
      await session.close();
    }

    const p50 = (values) => percentile(values, 0.5);
    result.small = {
      pauseMs: small.pauses,
      resumeIntoWarmMs: small.warmResumes,
      resumeColdMs: small.coldResumes,
      snapshotBytes: small.bytes,
    };
    result.large = {
      dataBytes,
      snapshotBytes: large.bytes,
      pauseMs: large.pauses,
      resumeIntoWarmMs: large.warmResumes,
      resumeColdMs: large.coldResumes,
      forkIntoWarmMs: forks,
    };
    result.paused = {
      count,
      madeSeconds: round(madeSeconds),
      before,
      after,
      resumedAndChecked: sample.length,
    };
    const largeResume = p50(large.warmResumes);
    rows.push(
      ['small session: pause', 'p50', round(p50(small.pauses)), 'ms', '≤ 100', p50(small.pauses) <= 100],
      ['small session: resume → first result (warm session)', 'p50', round(p50(small.warmResumes)), 'ms', '', null],
      ['small session: resume → first result (cold start)', 'p50', round(p50(small.coldResumes)), 'ms', '', null],
      ['small session: snapshot size', 'bytes', small.bytes, 'B', '', null],
      ['100 MB DataFrame: pause', 'p50', round(p50(large.pauses)), 'ms', '≤ 1000', p50(large.pauses) <= 1000],
      [
        '100 MB DataFrame: resume → first result (warm session, as a server)',
        'p50',
        round(largeResume),
        'ms',
        '≤ 1000',
        largeResume <= 1000,
      ],
      [
        '100 MB DataFrame: resume → first result (cold start, resumeSession)',
        'p50',
        round(p50(large.coldResumes)),
        'ms',
        '',
        null,
      ],
      [
        '100 MB DataFrame: fork → first result (warm session)',
        'p50',
        round(p50(forks)),
        'ms',
        '≤ resume (warm)',
        p50(forks) <= largeResume,
      ],
      ['100 MB DataFrame: snapshot size / data size', 'ratio', round(large.bytes / dataBytes, 3), '', '', null],
      [
        `${count} paused sessions: sandbox processes left`,
        'count',
        after.processes - before.processes,
        '',
        '0',
        after.processes - before.processes === 0,
      ],
      [
        `${count} paused sessions: shared memory (tmpfs) after − before`,
        'Shmem',
        round(after.shmemMiB - before.shmemMiB),
        'MiB',
        '≈ 0',
        null,
      ],
      [
        `${count} paused sessions: this process's RSS after − before`,
        'rss',
        round(after.rssMiB - before.rssMiB),
        'MiB',
        '',
        null,
      ],
      [`${count} paused sessions: a sample resumed and checked`, 'resumed', sample.length, '', 'all', true],
    );
  } catch (error) {
    rows.push(['snapshots (bubblewrap)', 'skipped', 0, '', error.message.slice(0, 200), null]);
    result.error = error.message;
  } finally {
    rmSync(stateDirectory, { recursive: true, force: true });
  }
  return { rows, result };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows } = await runSnapshotBench({ quick: process.argv.includes('--quick') });
  for (const row of rows) console.log(row.join(' | '));
}
