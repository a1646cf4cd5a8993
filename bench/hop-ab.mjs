// The cost of one execution, A/B: two builds of sandcell measured alternately on this machine, each round in
// fresh Node processes, so that the machine's drift falls on both alike.
//
//   node bench/hop-ab.mjs --before DIST [--after DIST] [--backend bubblewrap|docker] [--start exec|fork]
//                         [--rounds 4] [--runs 400]
//
// DIST is a build's `dist` directory (this checkout's by default for --after). A build from before the
// supervisor, for example: `git worktree add /tmp/before ca22ea8^ && cd /tmp/before && npm ci && npm run build`,
// then `--before /tmp/before/dist` (for Docker, that build's runtime image too: `node bin/sandcell.js image build
// --backend docker` in /tmp/before). Each round measures, for each build:
// - warm round trips of `1 + 1` in one session (p50), and the CPU each process of the session and Node
//   spent per execution (bubblewrap: the session's processes are the host's);
// - 20 sessions each running `runs` executions at once: executions per second.
// The medians over the rounds are printed, and each round's figures.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cpuOf } from './process-cpu.mjs';
import { percentile } from './server.mjs';

const SERIAL_RUNS = 2000;
const PARALLEL_SESSIONS = 20;

function option(name, fallback) {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 && index + 1 < process.argv.length ? process.argv[index + 1] : fallback;
}

const median = (values) => percentile(values, 0.5);

/** One build, one round: runs in a child process of its own. */
async function measure(dist, backendName, start, runs) {
  const { createBackend, Session } = await import(path.join(path.resolve(dist), 'index.js'));
  const backend = createBackend(backendName, { bubblewrap: { start } });
  const check = (execution, expected) => {
    if (execution.results[0]?.data['text/plain'] !== expected) throw new Error(`expected ${expected}`);
  };
  const session = await Session.create({ backend });
  for (let run = 0; run < 300; run++) await session.run('1 + 1');
  const pids = backendName === 'bubblewrap' ? ((await session.usage()).processIds ?? []) : [];
  const cpuBefore = pids.map(cpuOf);
  const nodeBefore = process.cpuUsage();
  const times = [];
  for (let run = 0; run < SERIAL_RUNS; run++) {
    const begun = performance.now();
    check(await session.run('1 + 1'), '2');
    times.push(performance.now() - begun);
  }
  const node = process.cpuUsage(nodeBefore);
  const perProcessUs = pids.map((pid, index) => Math.round(((cpuOf(pid) - cpuBefore[index]) / SERIAL_RUNS) * 1e6));
  await session.close();

  const sessions = [];
  for (let index = 0; index < PARALLEL_SESSIONS; index++) sessions.push(await Session.create({ backend }));
  for (const each of sessions) for (let run = 0; run < 20; run++) await each.run('1 + 1');
  const started = performance.now();
  await Promise.all(
    sessions.map(async (each, index) => {
      for (let run = 0; run < runs; run++)
        check(await each.run(`${index} * 1000 + ${run}`), String(index * 1000 + run));
    }),
  );
  const throughput = (PARALLEL_SESSIONS * runs) / ((performance.now() - started) / 1000);
  await Promise.all(sessions.map((each) => each.close()));
  return {
    p50Ms: median(times),
    perProcessUs,
    nodeUs: Math.round((node.user + node.system) / SERIAL_RUNS),
    throughput: Math.round(throughput),
  };
}

async function main() {
  const self = fileURLToPath(import.meta.url);
  const backendName = option('backend', 'bubblewrap');
  const start = option('start', 'exec');
  const runs = Number(option('runs', '400'));
  if (process.argv.includes('--child')) {
    console.log(JSON.stringify(await measure(option('child'), backendName, start, runs)));
    process.exit(0);
  }
  const before = option('before');
  if (!before) throw new Error('--before DIST is required (see the top of bench/hop-ab.mjs)');
  const builds = { before, after: option('after', path.join(path.dirname(self), '..', 'dist')) };
  const rounds = Number(option('rounds', '4'));
  const figures = { before: [], after: [] };
  const run = promisify(execFile);
  for (let round = 0; round < rounds; round++) {
    for (const name of ['before', 'after']) {
      const args = [self, '--child', builds[name], '--backend', backendName, '--start', start, '--runs', String(runs)];
      const { stdout } = await run(process.execPath, args, { maxBuffer: 1 << 20 });
      const measured = JSON.parse(stdout.trim().split('\n').at(-1));
      figures[name].push(measured);
      console.log(`round ${round + 1} ${name}: ${JSON.stringify(measured)}`);
    }
  }
  console.log(`\n${backendName} (start: ${start}), medians of ${rounds} rounds:`);
  console.log('| build | warm 1 + 1, p50 | CPU per execution: session processes | Node | 20 in parallel |');
  console.log('|---|---|---|---|---|');
  for (const name of ['before', 'after']) {
    const each = figures[name];
    const processes = each[0].perProcessUs.map((_, index) => median(each.map((entry) => entry.perProcessUs[index])));
    console.log(
      `| ${name} | ${median(each.map((entry) => entry.p50Ms)).toFixed(3)} ms | ${processes.length ? processes.map((us) => `${us} µs`).join(' + ') : '—'} | ${median(each.map((entry) => entry.nodeUs))} µs | ${median(each.map((entry) => entry.throughput))} exec/s (${Math.min(...each.map((entry) => entry.throughput))}–${Math.max(...each.map((entry) => entry.throughput))}) |`,
    );
  }
}

await main();
