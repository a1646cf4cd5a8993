// `npm run bench`: sandcell's speed and memory on this machine, one column per backend, against the
// targets of the engine and Docker issues. Prints a table and writes bench/results/latest.json.
// Not a test: nothing here fails a build. A backend that cannot run here gets an empty column and a note. Each part has a
// time bound (bench/bounded.mjs): one that fails or stalls is a FAILED row with its first error, the others still print,
// and the bench then exits 1.
// Flags: --quick (fewer samples), --backend NAME (only that backend; repeatable), --backends-only (the
// per-backend rows and bench/gvisor.mjs alone), --no-server (skip bench/server.mjs, bench/arrivals.mjs, bench/e2b.mjs, bench/jupyter.mjs, bench/outputs.mjs, bench/ports.mjs, bench/terminals.mjs and bench/cluster.mjs).
// Each backend's own measures are bench/session-measures.mjs; here they and the other parts are run, bounded, and
// put in the one table (rows × backends) against their targets.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBackend } from '../dist/index.js';
import { runArrivalsBench } from './arrivals.mjs';
import { bounded, minutes } from './bounded.mjs';
import { runClusterBench } from './cluster.mjs';
import { runE2bBench } from './e2b.mjs';
import { runEnvironmentBench } from './environment.mjs';
import { runForkBench } from './fork.mjs';
import { runGvisorSnapshotBench } from './gvisor.mjs';
import { runJupyterBench } from './jupyter.mjs';
import { runNetworkGateBench } from './network-gate.mjs';
import { runOutputsBench } from './outputs.mjs';
import { runPortsBench } from './ports.mjs';
import { percentile, runServerBench } from './server.mjs';
import {
  coldStart,
  dockerExecPerCall,
  idleMemory,
  LANGUAGE_PROBES,
  languagesAndCommands,
  newFailures,
  parallel,
  poolFirstResult,
  round,
  warmRoundTrip,
} from './session-measures.mjs';
import { runSnapshotBench } from './snapshots.mjs';
import { runTerminalsBench } from './terminals.mjs';
import { runVolumesBench } from './volumes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const withServer = !process.argv.includes('--no-server');
// --backends-only: the per-backend rows and gVisor's beside bubblewrap's, without bubblewrap's own parts
// (environment pool, forks, snapshots, volumes) or the server's.
const backendsOnly = process.argv.includes('--backends-only');
const bubblewrapParts = !backendsOnly;
/** The values of every `--name value` on the command line. */
const flagValues = (name) =>
  process.argv.flatMap((argument, index) => (argument === name ? [process.argv[index + 1]] : []));

/**
 * The parts of the bench that failed (threw, or stalled past their bound), as [name, first error]: each is a
 * row of the table, and any makes the bench exit non-zero.
 */
const failedParts = [];

/** `run()`'s value within `limitMs`; else the part is failed (failedParts) and `fallback` stands for it. */
async function part(name, limitMs, run, fallback) {
  const outcome = await bounded(name, limitMs, run);
  if (!('failed' in outcome)) return outcome.value;
  failedParts.push([name, outcome.failed]);
  return fallback;
}

async function measure(backend) {
  const failures = newFailures();
  const measurePart = async (name, limitMs, run, fallback) => {
    const before = failedParts.length;
    const value = await part(`${backend.name}: ${name}`, limitMs, run, fallback);
    if (failedParts.length > before) failures.add(failedParts.at(-1)[1]);
    return value;
  };
  const noIdle = { rssMB: undefined, pssMB: undefined };
  const result = {
    cold: await measurePart('cold start', minutes(5), () => coldStart(backend, quick ? 3 : 10, failures), []),
    pooled: await measurePart('pooled start', minutes(5), () => poolFirstResult(backend, quick ? 5 : 20, failures), []),
    warm: await measurePart(
      'warm round trip',
      minutes(5),
      () => warmRoundTrip(backend, quick ? 200 : 1000, failures),
      [],
    ),
    idleCold: await measurePart('idle memory', minutes(3), () => idleMemory(backend, 4, [], failures), noIdle),
    idlePooled: await measurePart(
      'idle pooled memory',
      minutes(3),
      () => idleMemory(backend, 4, ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'], failures),
      noIdle,
    ),
    // 4,000 executions: fewer take well under a second here, and the machine's swings then outweigh the build's.
    load: await measurePart('parallel load', minutes(10), () => parallel(backend, 20, quick ? 50 : 200, failures), {
      sessions: 20,
      throughput: undefined,
      p95: undefined,
      wrong: undefined,
    }),
    languages: await measurePart(
      'languages and commands',
      minutes(10),
      () => languagesAndCommands(backend, quick ? 2 : 5, quick ? 100 : 500, failures),
      { languages: {}, command: [] },
    ),
  };
  return { ...result, failures: failures.count, firstFailure: failures.first };
}

const ALL_BACKENDS = ['bubblewrap', 'docker', 'gvisor'];
const chosen = flagValues('--backend');
const BACKENDS = chosen.length === 0 ? ALL_BACKENDS : ALL_BACKENDS.filter((name) => chosen.includes(name));
const measured = {};
const notes = [];
for (const name of BACKENDS) {
  const backend = createBackend(name);
  try {
    await backend.ensureAvailable();
  } catch (error) {
    notes.push(`${name}: not measured — ${error.message}`);
    continue;
  }
  measured[name] = await measure(backend);
  if (measured[name].failures > 0) {
    notes.push(`${name}: ${measured[name].failures} failed sample(s); the first: ${measured[name].firstFailure}`);
  }
  if (name === 'docker') {
    measured[name].dockerExec = await part('docker exec comparison', minutes(5), () =>
      dockerExecPerCall(backend.docker, backend.image, quick ? 5 : 20),
    );
  }
}

const p = percentile;
const value = (name, pick, digits) => {
  const result = measured[name];
  if (!result) return '';
  let picked;
  try {
    picked = pick(result);
  } catch {
    // No sample to compute it from (every one failed).
    return '';
  }
  return picked === undefined || picked === null ? '' : round(picked, digits);
};
/** A row: a statistic per backend, and for the backends with a target, the target and whether it is met. */
const row = (measureName, stat, pick, digits, unit, targets = {}) => {
  const values = BACKENDS.map((name) => value(name, pick, digits));
  const targetText = BACKENDS.filter((name) => targets[name])
    .map((name) => `${name}: ${targets[name].text}`)
    .join('; ');
  const metText = BACKENDS.filter((name) => targets[name] && measured[name])
    .map((name) => {
      try {
        return targets[name].met(pick(measured[name]), measured) ? 'yes' : 'NO';
      } catch {
        return 'NO';
      }
    })
    .join(' / ');
  return [measureName, stat, ...values.map(String), unit, targetText, metText];
};
const atMost = (limit) => ({
  text: `≤ ${limit}`,
  met: (observed) => typeof observed === 'number' && observed <= limit,
});
const warmP50 = (result) => p(result.warm, 0.5);
const rows = [
  row('cold session start → first result of 1+1', 'p50', (r) => p(r.cold, 0.5), 1, 'ms', { bubblewrap: atMost(400) }),
  row('', 'p95', (r) => p(r.cold, 0.95), 1, 'ms'),
  row('session from a warm pool → first result', 'p50', (r) => p(r.pooled, 0.5), 2, 'ms', {
    bubblewrap: atMost(15),
    docker: atMost(25),
  }),
  row('', 'p95', (r) => p(r.pooled, 0.95), 2, 'ms'),
  row('warm round trip of 1+1', 'p50', warmP50, 3, 'ms', {
    bubblewrap: atMost(2),
    docker: {
      text: "≤ bubblewrap's + 1",
      met: (observed, all) => all.bubblewrap !== undefined && observed <= warmP50(all.bubblewrap) + 1,
    },
  }),
  row('', 'p95', (r) => p(r.warm, 0.95), 3, 'ms'),
  row('', 'p99', (r) => p(r.warm, 0.99), 3, 'ms'),
  row('idle session (IPython only), 4 alive', 'PSS', (r) => r.idleCold.pssMB, 1, 'MB', { bubblewrap: atMost(60) }),
  row('', 'RSS', (r) => r.idleCold.rssMB, 1, 'MB'),
  row('', 'cgroup', (r) => r.idleCold.cgroupMB, 1, 'MB'),
  row('idle pooled session (numpy, pandas, matplotlib)', 'PSS', (r) => r.idlePooled.pssMB, 1, 'MB'),
  row('', 'RSS', (r) => r.idlePooled.rssMB, 1, 'MB'),
  row('', 'cgroup', (r) => r.idlePooled.cgroupMB, 1, 'MB'),
  row(`20 sessions × ${quick ? 50 : 200} executions in parallel`, 'throughput', (r) => r.load.throughput, 0, 'exec/s', {
    bubblewrap: { text: '≥ 500', met: (observed) => observed >= 500 },
  }),
  row('', 'p95', (r) => r.load.p95, 2, 'ms'),
  row('', 'wrong results', (r) => r.load.wrong, 0, '', {
    bubblewrap: { text: '0', met: (observed) => observed === 0 },
    docker: { text: '0', met: (observed) => observed === 0 },
  }),
  ...Object.keys(LANGUAGE_PROBES).flatMap((language) => [
    row(
      `${language}: new context → first result of 1+1`,
      'p50',
      (r) => p(r.languages.languages[language].cold, 0.5),
      1,
      'ms',
      {
        bubblewrap: atMost(1000),
      },
    ),
    row(`${language}: warm round trip of 1+1`, 'p50', (r) => p(r.languages.languages[language].warm, 0.5), 3, 'ms', {
      bubblewrap: atMost(2),
    }),
  ]),
  row("commands.run('true') round trip", 'p50', (r) => p(r.languages.command, 0.5), 2, 'ms', {
    bubblewrap: atMost(10),
  }),
  row('', 'p95', (r) => p(r.languages.command, 0.95), 2, 'ms'),
  row('all of the above', 'failed samples', (r) => r.failures, 0, '', {
    bubblewrap: { text: '0', met: (observed) => observed === 0 },
    docker: { text: '0', met: (observed) => observed === 0 },
  }),
  row(
    'cookbook way: `docker exec … python3 -c` per call (stateless)',
    'p50',
    (r) => (r.dockerExec ? p(r.dockerExec, 0.5) : undefined),
    1,
    'ms',
  ),
];

// A custom environment's warm pool (bench/environment.mjs, bubblewrap), beside the default's pool row.
const NOTHING = { rows: [], result: undefined };
const environment =
  bubblewrapParts && BACKENDS.includes('bubblewrap')
    ? await part('environment pool (bench/environment.mjs)', minutes(15), () => runEnvironmentBench({ quick }), NOTHING)
    : NOTHING;
/** An observed value in the first backend's column (a server row: the server runs the default backend), the others empty. */
const firstColumn = (observed) => BACKENDS.map((_, index) => (index === 0 ? String(observed) : ''));
/** A row measured on bubblewrap alone (`[measure, stat, observed, unit, target, met]`), in the table's columns. */
const bubblewrapRow = ([measureName, stat, observed, unit, target, met]) => [
  measureName,
  stat,
  ...BACKENDS.map((name) => (name === 'bubblewrap' ? String(observed) : '')),
  unit,
  target ? `bubblewrap: ${target}` : '',
  met === null ? '' : met ? 'yes' : 'NO',
];
const poolRow = rows.findIndex((cells) => cells[0] === 'session from a warm pool → first result');
rows.splice(poolRow + 2, 0, ...environment.rows.map(bubblewrapRow));

// Sessions forked from a warm template beside a start by exec (bench/fork.mjs, bubblewrap as root).
// Its stages are bounded one by one (their failures are rows of its own); the whole is bounded too.
const forked =
  bubblewrapParts && BACKENDS.includes('bubblewrap')
    ? await part('forked sessions (bench/fork.mjs)', minutes(60), () => runForkBench({ quick }), NOTHING)
    : NOTHING;
for (const failed of forked.failed ?? []) failedParts.push([`forked sessions: ${failed}`, '']);
rows.push(...forked.rows.map(bubblewrapRow));

// Pause, resume and fork (bench/snapshots.mjs, bubblewrap).
const snapshots =
  bubblewrapParts && BACKENDS.includes('bubblewrap')
    ? await part('snapshots (bench/snapshots.mjs)', minutes(15), () => runSnapshotBench({ quick }), NOTHING)
    : NOTHING;
rows.push(...snapshots.rows.map(bubblewrapRow));

// Volumes (bench/volumes.mjs, bubblewrap): 1 GB through a volume beside the host's disk, a mount's cost to a start.
const volumes =
  bubblewrapParts && BACKENDS.includes('bubblewrap')
    ? await part('volumes (bench/volumes.mjs)', minutes(15), () => runVolumesBench({ quick }), NOTHING)
    : NOTHING;
rows.push(...volumes.rows.map(bubblewrapRow));

// --- server (sandcell serve over HTTP, on the default backend): bench/server.mjs ---------------------
// The parts that start a server: skipped (NOTHING) without one.
const serverPart = (name, limitMs, run) =>
  withServer && !backendsOnly ? part(name, limitMs, () => run({ quick }), NOTHING) : NOTHING;
const server = await serverPart('server (bench/server.mjs)', minutes(20), runServerBench);
// New sessions arriving steadily, the pool sized by demand and fixed: bench/arrivals.mjs.
const arrivals = await serverPart('arrivals (bench/arrivals.mjs)', minutes(20), runArrivalsBench);
// --- the E2B SDK against the same kind of server: bench/e2b.mjs ----------------------------------------
const e2b = await serverPart('E2B SDK (bench/e2b.mjs)', minutes(15), runE2bBench);
// The Jupyter front door (bench/jupyter.mjs): the channels websocket beside /v1 and a raw ipykernel.
const jupyter = await serverPart('Jupyter (bench/jupyter.mjs)', minutes(15), runJupyterBench);
// Published outputs (bench/outputs.mjs): what publishing adds to an execution, 100 MB beside the SDK alone.
const outputs = await serverPart('published outputs (bench/outputs.mjs)', minutes(15), runOutputsBench);
// Apps on ports (bench/ports.mjs): a GET's added latency, a 100 MB download, 100 WebSockets at once.
const ports = await serverPart('ports (bench/ports.mjs)', minutes(10), runPortsBench);
// Terminals (bench/terminals.mjs): keystroke echo through the E2B door, 20 MB of output in bounded memory.
const terminals = await serverPart('terminals (bench/terminals.mjs)', minutes(10), runTerminalsBench);
// Several nodes as one service (bench/cluster.mjs): forwarding, a drain, a moved session.
const cluster = await serverPart('cluster (bench/cluster.mjs)', minutes(15), runClusterBench);
// The network gate (bench/network-gate.mjs): its added latency on a small HTTPS request; no sandbox.
const networkGate = backendsOnly
  ? NOTHING
  : await part('network gate (bench/network-gate.mjs)', minutes(10), () => runNetworkGateBench({ quick }), NOTHING);
for (const [measureName, stat, observed, unit, target, met] of networkGate.rows) {
  rows.push([measureName, stat, ...firstColumn(observed), unit, target, met === null ? '' : met ? 'yes' : 'NO']);
}
for (const [measureName, stat, observed, unit, target, met] of [
  ...server.rows,
  ...arrivals.rows,
  ...e2b.rows,
  ...jupyter.rows,
  ...outputs.rows,
  ...ports.rows,
  ...terminals.rows,
  ...cluster.rows,
]) {
  rows.push([
    measureName,
    stat,
    ...firstColumn(observed),
    unit,
    target ? `bubblewrap: ${target}` : '',
    met === null ? '' : met ? 'yes' : 'NO',
  ]);
}

// gVisor beside bubblewrap (bench/gvisor.mjs): pause and resume of a 100 MB DataFrame, each a checkpoint there.
const gvisorRows = BACKENDS.includes('gvisor')
  ? await part('gVisor snapshots (bench/gvisor.mjs)', minutes(15), () => runGvisorSnapshotBench({ quick }), NOTHING)
  : NOTHING;
for (const [measureName, stat, byBackend, unit] of gvisorRows.rows) {
  rows.push([measureName, stat, ...BACKENDS.map((name) => String(byBackend[name] ?? '')), unit, '', '']);
}

// Each part that failed: its name, FAILED, and its first error (a fork stage's row is its own, above).
for (const [name, why] of failedParts) {
  if (!why) continue;
  rows.push([name, 'FAILED', ...BACKENDS.map((_, index) => (index === 0 ? why : '')), '', 'done', 'NO']);
}

// gVisor's figure over bubblewrap's, where both were measured: what the stronger wall costs.
const withRatio = BACKENDS.includes('gvisor') && BACKENDS.includes('bubblewrap');
const ratioOf = (cells) => {
  const bubblewrap = Number.parseFloat(cells[2 + BACKENDS.indexOf('bubblewrap')]);
  const gvisor = Number.parseFloat(cells[2 + BACKENDS.indexOf('gvisor')]);
  return Number.isFinite(bubblewrap) && Number.isFinite(gvisor) && bubblewrap > 0
    ? `${round(gvisor / bubblewrap, 2)}×`
    : '';
};
const header = ['measure', 'stat', ...BACKENDS, ...(withRatio ? ['gvisor ÷ bubblewrap'] : []), 'unit', 'target', 'met'];
if (withRatio) {
  for (const cellsOfRow of rows) cellsOfRow.splice(2 + BACKENDS.length, 0, ratioOf(cellsOfRow));
}
const cells = [header, ...rows];
const widths = header.map((_, column) => Math.max(...cells.map((row) => row[column].length)));
const line = (row) => `| ${row.map((cell, column) => cell.padEnd(widths[column])).join(' | ')} |`;
console.log(line(header));
console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
for (const cellsOfRow of cells.slice(1)) console.log(line(cellsOfRow));
for (const note of notes) console.log(`note: ${note}`);

const result = {
  date: new Date().toISOString(),
  machine: {
    cpus: os.cpus().length,
    memoryGiB: round(os.totalmem() / 2 ** 30, 1),
    kernel: os.release(),
    node: process.version,
  },
  backends: Object.fromEntries(
    Object.entries(measured).map(([name, r]) => [
      name,
      {
        coldStartMs: { p50: p(r.cold, 0.5), p95: p(r.cold, 0.95), samples: r.cold.length },
        poolFirstResultMs: { p50: p(r.pooled, 0.5), p95: p(r.pooled, 0.95), samples: r.pooled.length },
        warmRoundTripMs: { p50: p(r.warm, 0.5), p95: p(r.warm, 0.95), p99: p(r.warm, 0.99), samples: r.warm.length },
        idleSessionMemory: { ipythonOnly: r.idleCold, pooled: r.idlePooled },
        failedSamples: r.failures,
        parallel: {
          sessions: r.load.sessions,
          executionsEach: 50,
          throughputPerSecond: r.load.throughput,
          p95Ms: r.load.p95,
          wrongResults: r.load.wrong,
        },
        languages: Object.fromEntries(
          Object.entries(r.languages.languages).map(([language, { cold, warm }]) => [
            language,
            {
              newContextFirstResultMs: { p50: p(cold, 0.5), samples: cold.length },
              warmRoundTripMs: { p50: p(warm, 0.5), p95: p(warm, 0.95), samples: warm.length },
            },
          ]),
        ),
        commandRoundTripMs: {
          p50: p(r.languages.command, 0.5),
          p95: p(r.languages.command, 0.95),
          samples: r.languages.command.length,
        },
        ...(r.dockerExec ? { dockerExecPerCallMs: { p50: p(r.dockerExec, 0.5), samples: r.dockerExec.length } } : {}),
      },
    ]),
  ),
  notes,
  failedParts: failedParts.map(([name, why]) => ({ name, why })),
  server: server.result,
  arrivals: arrivals.result,
  e2b: e2b.result,
  jupyter: jupyter.result,
  outputs: outputs.result,
  ports: ports.result,
  volumes: volumes.result,
  terminals: terminals.result,
  cluster: cluster.result,
  networkGate: networkGate.result,
  environment: environment.result,
  forked: forked.result,
  snapshots: snapshots.result,
  gvisorSnapshots: gvisorRows.result,
};
mkdirSync(path.join(here, 'results'), { recursive: true });
writeFileSync(path.join(here, 'results', 'latest.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log('\nwritten to bench/results/latest.json');
if (failedParts.length > 0) {
  console.log(`\n${failedParts.length} part(s) of the bench failed:`);
  for (const [name, why] of failedParts) console.log(`  ${name}${why ? `: ${why}` : ''}`);
}
// A stalled part's work is abandoned, not awaited: end here, non-zero when a part failed.
process.exit(failedParts.length > 0 ? 1 : 0);
