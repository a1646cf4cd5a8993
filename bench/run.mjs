// `npm run bench`: sandcell's speed and memory on this machine, against the targets of the engine issue.
// Prints a table and writes bench/results/latest.json. Not a test: nothing here fails a build.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, SessionPool } from '../dist/index.js';
import { runServerBench } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const now = () => performance.now();

function percentile(values, fraction) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
}
const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function memoryOf(processIds) {
  let rssKiB = 0;
  let pssKiB = 0;
  for (const pid of processIds) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      rssKiB += Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
      pssKiB += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    } catch {
      // ended meanwhile
    }
  }
  return { rssMB: round(rssKiB / 1024, 1), pssMB: round(pssKiB / 1024, 1) };
}

async function coldStart(samples) {
  const times = [];
  for (let index = 0; index < samples; index++) {
    const started = now();
    const session = await Session.create();
    const execution = await session.run('1+1');
    times.push(now() - started);
    if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('cold start: wrong result');
    await session.close();
  }
  return times;
}

async function poolFirstResult(samples) {
  const pool = new SessionPool({ size: 2, maxSessions: 8 });
  await pool.start();
  const times = [];
  for (let index = 0; index < samples; index++) {
    // Wait until the pool is warm again, as it is between users in practice.
    while (pool.stats().warm < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    const started = now();
    const session = await pool.acquire();
    const execution = await session.run('1+1');
    times.push(now() - started);
    if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('pool: wrong result');
    await session.close();
  }
  await pool.close();
  return times;
}

async function warmRoundTrip(runs) {
  const session = await Session.create();
  for (let index = 0; index < 100; index++) await session.run('1+1');
  const times = [];
  for (let index = 0; index < runs; index++) {
    const started = now();
    await session.run('1+1');
    times.push(now() - started);
  }
  await session.close();
  return times;
}

async function idleMemory(count, preloadModules) {
  const sessions = await Promise.all(Array.from({ length: count }, () => Session.create({ preloadModules })));
  await Promise.all(sessions.map((session) => session.run('1+1')));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const perSession = [];
  for (const session of sessions) {
    const usage = await session.usage();
    perSession.push({
      ...memoryOf(usage.processIds ?? []),
      cgroupMB: usage.memoryBytes ? round(usage.memoryBytes / 2 ** 20, 1) : null,
    });
  }
  await Promise.all(sessions.map((session) => session.close()));
  const mean = (key) => round(perSession.reduce((sum, entry) => sum + (entry[key] ?? 0), 0) / perSession.length, 1);
  return { sessions: count, rssMB: mean('rssMB'), pssMB: mean('pssMB'), cgroupMB: mean('cgroupMB') };
}

async function parallel(sessionCount, runsEach) {
  const sessions = await Promise.all(Array.from({ length: sessionCount }, () => Session.create()));
  await Promise.all(sessions.map((session) => session.run('1+1')));
  const latencies = [];
  let wrong = 0;
  const started = now();
  await Promise.all(
    sessions.map(async (session, index) => {
      for (let run = 0; run < runsEach; run++) {
        const begun = now();
        const execution = await session.run(`${index} * 1000 + ${run}`);
        latencies.push(now() - begun);
        if (execution.results[0]?.data['text/plain'] !== String(index * 1000 + run)) wrong++;
      }
    }),
  );
  const seconds = (now() - started) / 1000;
  await Promise.all(sessions.map((session) => session.close()));
  return { throughput: (sessionCount * runsEach) / seconds, p95: percentile(latencies, 0.95), wrong };
}

const cold = await coldStart(quick ? 3 : 10);
const pooled = await poolFirstResult(quick ? 5 : 20);
const warm = await warmRoundTrip(quick ? 200 : 1000);
const idleCold = await idleMemory(4, []);
const idlePooled = await idleMemory(4, ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot']);
const load = await parallel(20, 50);

/** One line per statistic; `target` (with its check) only on the line the issue sets a target for. */
const stat = (measure, name, value, unit, target, met) => [measure, name, value, unit, target ?? '', met ?? null];
const p = percentile;
const rows = [
  stat('cold session start → first result of 1+1', 'p50', round(p(cold, 0.5), 1), 'ms', '≤ 400', p(cold, 0.5) <= 400),
  stat('', 'p95', round(p(cold, 0.95), 1), 'ms'),
  stat('session from a warm pool → first result', 'p50', round(p(pooled, 0.5), 2), 'ms', '≤ 15', p(pooled, 0.5) <= 15),
  stat('', 'p95', round(p(pooled, 0.95), 2), 'ms'),
  stat('warm round trip of 1+1', 'p50', round(p(warm, 0.5), 3), 'ms', '≤ 2', p(warm, 0.5) <= 2),
  stat('', 'p95', round(p(warm, 0.95), 3), 'ms'),
  stat('', 'p99', round(p(warm, 0.99), 3), 'ms'),
  stat('idle session (IPython only), 4 alive', 'PSS', idleCold.pssMB, 'MB', '≤ 60', idleCold.pssMB <= 60),
  stat('', 'RSS', idleCold.rssMB, 'MB'),
  stat('idle pooled session (numpy, pandas, matplotlib)', 'PSS', idlePooled.pssMB, 'MB'),
  stat('', 'RSS', idlePooled.rssMB, 'MB'),
  stat(
    '20 sessions × 50 executions in parallel',
    'throughput',
    round(load.throughput, 0),
    'exec/s',
    '≥ 500',
    load.throughput >= 500,
  ),
  stat('', 'p95', round(load.p95, 2), 'ms'),
  stat('', 'wrong results', load.wrong, '', '0', load.wrong === 0),
];

// --- server (sandcell serve over HTTP): bench/server.mjs -------------------------------------------
const server = await runServerBench({ quick });
rows.push(...server.rows);

const header = ['measure', 'stat', 'value', 'unit', 'target', 'met'];
const cells = [
  header,
  ...rows.map((row) =>
    row.map((cell, index) => (index === 5 ? (cell === null ? '' : cell ? 'yes' : 'NO') : String(cell))),
  ),
];
const widths = header.map((_, column) => Math.max(...cells.map((row) => row[column].length)));
const line = (row) => `| ${row.map((cell, column) => cell.padEnd(widths[column])).join(' | ')} |`;
console.log(line(header));
console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
for (const row of cells.slice(1)) console.log(line(row));

const result = {
  date: new Date().toISOString(),
  machine: {
    cpus: os.cpus().length,
    memoryGiB: round(os.totalmem() / 2 ** 30, 1),
    kernel: os.release(),
    node: process.version,
  },
  backend: 'bubblewrap',
  coldStartMs: { p50: percentile(cold, 0.5), p95: percentile(cold, 0.95), samples: cold.length },
  poolFirstResultMs: { p50: percentile(pooled, 0.5), p95: percentile(pooled, 0.95), samples: pooled.length },
  warmRoundTripMs: {
    p50: percentile(warm, 0.5),
    p95: percentile(warm, 0.95),
    p99: percentile(warm, 0.99),
    samples: warm.length,
  },
  idleSessionMemory: { ipythonOnly: idleCold, pooled: idlePooled },
  parallel: {
    sessions: 20,
    executionsEach: 50,
    throughputPerSecond: load.throughput,
    p95Ms: load.p95,
    wrongResults: load.wrong,
  },
  server: server.result,
};
mkdirSync(path.join(here, 'results'), { recursive: true });
writeFileSync(path.join(here, 'results', 'latest.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log('\nwritten to bench/results/latest.json');
