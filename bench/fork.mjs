// Sessions forked from a warm template (issue 31), beside a start by exec in the same run: bubblewrap as
// root (`node bench/fork.mjs [--quick]` alone, or part of `npm run bench`).
//   - a new session → the first result of 1+1, pandas imported, nothing warm: wall time and CPU (the
//     session's processes and its fork's helper, the template's own share, and Node's);
//   - where a fork's time goes: isolated and dialed in, its kernel ready, the first result;
//   - idle memory after ten cells touching pandas: PSS, and how much of it each session holds alone;
//   - 200 sessions asked for at once over HTTP (`sandcell serve`), every output checked;
//   - 1,000 live idle sessions (fork only: by exec they would need ~45 GB), each answering 1+1.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBackend, DEFAULT_LIMITS, Session } from '../dist/index.js';
import { bounded, failedRow, minutes } from './bounded.mjs';
import { cpuOf } from './process-cpu.mjs';
import { percentile, startServer } from './server.mjs';

const now = () => performance.now();
const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const PRELOAD = ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'];
const PANDAS_CELL = (index) =>
  `import pandas as pd\nframe = pd.DataFrame({"a": range(${1000 + index}), "b": [x * 0.5 for x in range(${1000 + index})]})\nframe["c"] = frame.a + frame.b\nresult_${index} = frame.describe()\nlen(frame)`;

function parentOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** This process's session templates (the Python under each bwrap this process started for sandcell_zygote.py). */
function templates() {
  const found = [];
  for (const name of readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)) {
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('sandcell_zygote.py')) continue;
      const bwrap = parentOf(name);
      if (
        parentOf(bwrap) === process.pid &&
        readFileSync(`/proc/${bwrap}/cmdline`, 'utf8').startsWith('/usr/bin/bwrap')
      )
        found.push(name);
    } catch {
      // gone
    }
  }
  return found;
}

/** PSS, and the pages held alone (private clean + dirty), of some processes, in MiB. */
function memoryOf(pids) {
  let pss = 0;
  let alone = 0;
  for (const pid of pids) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
      pss += field('Pss');
      alone += field('Private_Clean') + field('Private_Dirty');
    } catch {
      // gone
    }
  }
  return { pss: pss / 1024, alone: alone / 1024 };
}

/** Sessions one after another: wall time to the first result, and CPU per start. */
async function newSessions(backend, samples, failures) {
  const times = [];
  const cpu = [];
  for (let index = 0; index < samples; index++) {
    try {
      const template = templates()[0];
      const templateBefore = template ? cpuOf(template) : 0;
      const nodeBefore = process.cpuUsage();
      const started = now();
      const session = await Session.create({ backend, preloadModules: PRELOAD });
      try {
        const execution = await session.run('1+1');
        const elapsed = now() - started;
        if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('new session: wrong result');
        const usage = await session.usage();
        const node = process.cpuUsage(nodeBefore);
        const templateCpu = template ? cpuOf(template) - templateBefore : 0;
        times.push(elapsed);
        cpu.push((usage.cpuSeconds ?? 0) + templateCpu + (node.user + node.system) / 1e6);
      } finally {
        await session.close();
      }
    } catch (error) {
      failures.add(error);
    }
  }
  return { times, cpu };
}

/** Where a fork's time goes, read on the sandbox's own channel. */
async function forkPhases(backend, samples, failures) {
  const phases = { isolated: [], ready: [], firstResult: [] };
  for (let index = 0; index < samples; index++) {
    let volume;
    let sandbox;
    try {
      volume = await backend.createVolume({ sessionId: `bench-phases-${index}-${Date.now()}`, limits: DEFAULT_LIMITS });
      const started = now();
      sandbox = await backend.start({ volume, limits: DEFAULT_LIMITS, kernelOptions: {} });
      phases.isolated.push(now() - started);
      let buffered = '';
      const lines = [];
      const waiters = [];
      sandbox.output.on('data', (chunk) => {
        buffered += chunk;
        let newline = buffered.indexOf('\n');
        while (newline !== -1) {
          lines.push(JSON.parse(buffered.slice(0, newline)));
          buffered = buffered.slice(newline + 1);
          newline = buffered.indexOf('\n');
        }
        for (const waiter of waiters.splice(0)) waiter();
      });
      const until = async (test) => {
        while (!lines.some(test)) await new Promise((resolve) => waiters.push(resolve));
      };
      await until((line) => line.type === 'ready');
      phases.ready.push(now() - started);
      sandbox.input.write(`${JSON.stringify({ type: 'execute', id: 'x', context: 'python', code: '1+1' })}\n`);
      await until((line) => line.type === 'execution-end');
      phases.firstResult.push(now() - started);
    } catch (error) {
      failures.add(error);
    } finally {
      await sandbox?.kill();
      await volume?.dispose();
    }
  }
  return phases;
}

/** Ten cells with pandas in a session, each result checked. */
async function runPandasCells(session) {
  for (let cell = 0; cell < 10; cell++) {
    const execution = await session.run(PANDAS_CELL(cell));
    if (execution.results[0]?.data['text/plain'] !== String(1000 + cell)) throw new Error('pandas cell: wrong result');
  }
}

/** PSS and what is held alone, per session, of these sessions' processes, once they have settled. */
async function memoryPerSession(sessions) {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const pids = (await Promise.all(sessions.map((session) => session.usage()))).flatMap(
    (usage) => usage.processIds ?? [],
  );
  const memory = memoryOf(pids);
  return { pssMB: memory.pss / sessions.length, aloneMB: memory.alone / sessions.length, sessions: sessions.length };
}

/** Idle sessions after ten cells with pandas: PSS per session, and what each holds alone. */
async function idleMemory(backend, count, failures) {
  const sessions = [];
  try {
    for (let index = 0; index < count; index++) {
      const session = await Session.create({ backend, preloadModules: PRELOAD });
      sessions.push(session);
      await runPandasCells(session);
    }
    return await memoryPerSession(sessions);
  } catch (error) {
    failures.add(error);
    return undefined;
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
  }
}

/** Many sessions asked for at once over HTTP, each running a checked cell. */
async function burstOverHttp(start, count, failures) {
  const server = await startServer(
    [
      '--pool-size',
      '0',
      '--max-sessions',
      String(count + 16),
      '--sessions-per-key',
      String(count + 16),
      '--executions-per-minute',
      '0',
      '--max-connections-per-address',
      String(4 * count),
    ],
    { SANDCELL_START: start },
  );
  const post = async (url, body) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(300_000),
    });
    if (!response.ok) throw new Error(`POST ${url} → ${response.status}: ${await response.text()}`);
    return response.json();
  };
  try {
    // The server's first start is always by exec (auto and fork alike warm the template there): one session first.
    const first = await post(`${server.url}/v1/sessions`);
    const started = now();
    let created = 0;
    let checked = 0;
    let createdAt = 0;
    const ids = [];
    await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        try {
          const session = await post(`${server.url}/v1/sessions`);
          ids.push(session.id);
          created++;
          if (created === count) createdAt = now() - started;
          const execution = await post(`${server.url}/v1/sessions/${session.id}/executions`, {
            code: `import pandas\nint(pandas.Series([${index}, 1]).sum())`,
          });
          if (execution.results[0]?.data['text/plain'] === String(index + 1)) checked++;
        } catch (error) {
          failures.add(error);
        }
      }),
    );
    const allChecked = now() - started;
    await Promise.all(
      [first.id, ...ids].map((id) =>
        fetch(`${server.url}/v1/sessions/${id}`, { method: 'DELETE' }).then(
          (response) => response.text(),
          () => undefined,
        ),
      ),
    );
    return { created, checked, createdSeconds: createdAt / 1000, checkedSeconds: allChecked / 1000 };
  } finally {
    await server.stop();
  }
}

/** Many live idle sessions at once (forked), each answering 1+1 once all are up; then, with all of them
 * alive, a few run ten cells with pandas, measured as idleMemory measures its sessions. */
async function manyIdle(backend, count, busyCount, failures) {
  const sessions = [];
  const started = now();
  const limits = { dataBytes: 16 * 1024 * 1024 };
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < count) {
        next++;
        try {
          sessions.push(await Session.create({ backend, limits }));
        } catch (error) {
          failures.add(error);
        }
      }
    }),
  );
  const createdSeconds = (now() - started) / 1000;
  let answered = 0;
  const asked = now();
  await Promise.all(
    sessions.map(async (session) => {
      try {
        if ((await session.run('1+1')).results[0]?.data['text/plain'] === '2') answered++;
      } catch (error) {
        failures.add(error);
      }
    }),
  );
  const answeredSeconds = (now() - asked) / 1000;
  const pids = (await Promise.all(sessions.map((session) => session.usage()))).flatMap(
    (usage) => usage.processIds ?? [],
  );
  const memory = memoryOf(pids);
  const busy = sessions.slice(0, busyCount);
  let afterCells;
  try {
    for (const session of busy) await runPandasCells(session);
    afterCells = await memoryPerSession(busy);
  } catch (error) {
    failures.add(error);
  }
  const closing = now();
  await Promise.all(sessions.map((session) => session.close().catch((error) => failures.add(error))));
  return {
    alive: sessions.length,
    answered,
    createdSeconds,
    answeredSeconds,
    closedSeconds: (now() - closing) / 1000,
    pssMBEach: memory.pss / Math.max(1, sessions.length),
    afterCells,
  };
}

export async function runForkBench({ quick = false } = {}) {
  const failures = { count: 0, first: undefined };
  failures.add = (error) => {
    failures.count++;
    failures.first ??= error?.message ?? String(error);
  };
  if (process.getuid?.() !== 0) {
    return { rows: [['forked sessions', '', 'not measured: forking needs root', '', '', null]], result: undefined };
  }
  const exec = createBackend('bubblewrap', { bubblewrap: { start: 'exec' } });
  const fork = createBackend('bubblewrap', { bubblewrap: { start: 'fork' } });
  await exec.ensureAvailable();
  // Each stage has a bound: one that throws or stalls is a failed row with its first error, and the rest go on.
  const failedStages = [];
  const stage = async (name, limitMs, run, fallback) => {
    const outcome = await bounded(`forked sessions: ${name}`, limitMs, run);
    if (!('failed' in outcome)) return outcome.value;
    failedStages.push([name, outcome.failed]);
    failures.add(outcome.failed);
    return fallback;
  };
  // The template's own start, once per environment and process.
  const bootCpuBefore = process.cpuUsage();
  const bootStarted = now();
  await stage("the template's start", minutes(3), async () => (await Session.create({ backend: fork })).close());
  const templateBootMs = now() - bootStarted;
  const [template] = templates();
  const nodeBoot = process.cpuUsage(bootCpuBefore);
  const templateBootCpu = (template ? cpuOf(template) : 0) + (nodeBoot.user + nodeBoot.system) / 1e6;
  const samples = quick ? 3 : 10;
  const noStarts = { times: [], cpu: [] };
  const execStarts = await stage(
    'new sessions by exec',
    minutes(5),
    () => newSessions(exec, samples, failures),
    noStarts,
  );
  const forkStarts = await stage(
    'new forked sessions',
    minutes(5),
    () => newSessions(fork, samples, failures),
    noStarts,
  );
  const phases = await stage("a fork's phases", minutes(3), () => forkPhases(fork, quick ? 3 : 10, failures), {
    isolated: [],
    ready: [],
    firstResult: [],
  });
  const idleCount = quick ? 4 : 20;
  const execIdle = await stage('idle memory by exec', minutes(5), () => idleMemory(exec, idleCount, failures));
  const forkIdle = await stage('idle memory forked', minutes(5), () => idleMemory(fork, idleCount, failures));
  const burstCount = quick ? 20 : 200;
  const noBurst = { created: 0, checked: 0, createdSeconds: Number.NaN, checkedSeconds: Number.NaN };
  const forkBurst = await stage(
    'a burst over HTTP, forked',
    minutes(10),
    () => burstOverHttp('fork', burstCount, failures),
    noBurst,
  );
  const execBurst = quick
    ? undefined
    : await stage('a burst over HTTP by exec', minutes(10), () => burstOverHttp('exec', burstCount, failures), noBurst);
  const many = await stage(
    'many idle sessions',
    minutes(15),
    () => manyIdle(fork, quick ? 100 : 1000, idleCount, failures),
    {
      alive: 0,
      answered: 0,
      createdSeconds: Number.NaN,
      answeredSeconds: Number.NaN,
      closedSeconds: Number.NaN,
      pssMBEach: Number.NaN,
    },
  );

  const p = percentile;
  const ms = (values, fraction) => (values.length ? round(p(values, fraction), 1) : '');
  const stat = (measure, name, value, unit, target, met) => [measure, name, value, unit, target ?? '', met ?? null];
  const forkP50 = p(forkStarts.times, 0.5);
  const forkCpu = p(forkStarts.cpu, 0.5) * 1000;
  const rows = [
    stat('new session → first result, pandas imported, nothing warm: exec', 'p50', ms(execStarts.times, 0.5), 'ms'),
    stat('', 'CPU (p50)', round(p(execStarts.cpu, 0.5) * 1000, 0), 'ms'),
    stat('… forked from a template', 'p50', ms(forkStarts.times, 0.5), 'ms', '≤ 100', forkP50 <= 100),
    stat('', 'p95', ms(forkStarts.times, 0.95), 'ms'),
    stat('', 'CPU (p50)', round(forkCpu, 0), 'ms', '≤ 50', forkCpu <= 50),
    stat('', "the template's own start (once)", round(templateBootMs, 0), 'ms'),
    stat('', "the template's own start, CPU", round(templateBootCpu * 1000, 0), 'ms'),
    stat('a fork: isolated, channel dialed in', 'p50', ms(phases.isolated, 0.5), 'ms'),
    stat('', 'kernel ready', ms(phases.ready, 0.5), 'ms'),
    stat('', 'first result of 1+1', ms(phases.firstResult, 0.5), 'ms'),
    stat(`idle session after 10 pandas cells (${idleCount} alive): exec`, 'PSS', round(execIdle?.pssMB ?? 0, 1), 'MB'),
    stat('', 'held alone', round(execIdle?.aloneMB ?? 0, 1), 'MB'),
    stat('… forked', 'PSS', round(forkIdle?.pssMB ?? 0, 1), 'MB', '≤ 15', (forkIdle?.pssMB ?? Infinity) <= 15),
    stat('', 'held alone', round(forkIdle?.aloneMB ?? 0, 1), 'MB'),
    stat(
      `${burstCount} sessions asked for at once over HTTP, forked`,
      'all created in',
      round(forkBurst.createdSeconds, 1),
      's',
      burstCount === 200 ? '≤ 10' : '',
      burstCount === 200 ? forkBurst.created === burstCount && forkBurst.createdSeconds <= 10 : null,
    ),
    stat(
      '',
      'outputs checked',
      forkBurst.checked,
      `of ${burstCount}`,
      String(burstCount),
      forkBurst.checked === burstCount,
    ),
    stat('', 'all checked in', round(forkBurst.checkedSeconds, 1), 's'),
    ...(execBurst
      ? [
          stat('… by exec', 'all created in', round(execBurst.createdSeconds, 1), 's'),
          stat('', 'outputs checked', execBurst.checked, `of ${burstCount}`),
        ]
      : []),
    stat(
      `${many.alive} live idle forked sessions`,
      'answering 1+1',
      many.answered,
      `of ${quick ? 100 : 1000}`,
      quick ? '' : '1000',
      quick ? null : many.answered === 1000,
    ),
    stat('', 'created in', round(many.createdSeconds, 1), 's'),
    stat('', 'all answered in', round(many.answeredSeconds, 1), 's'),
    stat('', 'PSS each', round(many.pssMBEach, 1), 'MB'),
    stat(
      `… ${many.afterCells?.sessions ?? idleCount} of them after 10 pandas cells, all alive`,
      'PSS',
      round(many.afterCells?.pssMB ?? 0, 1),
      'MB',
      '≤ 15',
      (many.afterCells?.pssMB ?? Infinity) <= 15,
    ),
    stat('', 'held alone', round(many.afterCells?.aloneMB ?? 0, 1), 'MB'),
    stat('forked sessions: the measures above', 'failed samples', failures.count, '', '0', failures.count === 0),
  ];
  const result = {
    templateBootMs,
    templateBootCpuSeconds: templateBootCpu,
    exec: { startMs: execStarts.times, cpuSeconds: execStarts.cpu, idle: execIdle, burst: execBurst },
    fork: { startMs: forkStarts.times, cpuSeconds: forkStarts.cpu, phases, idle: forkIdle, burst: forkBurst, many },
    failedSamples: failures.count,
    ...(failures.first ? { firstFailure: failures.first } : {}),
  };
  rows.push(...failedStages.map(([name, why]) => failedRow(`forked sessions: ${name}`, why)));
  return { rows, result, failed: failedStages.map(([name, why]) => `${name}: ${why}`) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result, failed } = await runForkBench({ quick: process.argv.includes('--quick') });
  for (const row of rows)
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  console.log(JSON.stringify({ ...result, exec: undefined, fork: { ...result?.fork, startMs: undefined } }, null, 2));
  // A stalled stage's work is abandoned, not awaited: end here, non-zero when a stage failed.
  process.exit(failed?.length ? 1 : 0);
}
