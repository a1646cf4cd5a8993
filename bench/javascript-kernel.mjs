// The JavaScript and TypeScript kernel alone, without a sandbox or supervisor: cold start (spawn →
// ready), against a bare `node -e 0` on the same machine, and warm round trips of `1 + 1` (and of
// a TypeScript cell that must be transpiled). `node bench/javascript-kernel.mjs [node binary]`.
// Not a test: numbers only, noisy while the machine is busy.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const KERNEL = path.join(here, '..', 'src', 'kernel', 'sandcell_javascript_kernel.mjs');
const NODE = process.argv[2] ?? process.execPath;
const COLD_SAMPLES = 15;
const WARM_SAMPLES = 300;
const TRANSPILED_SAMPLES = 20;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (value) => Math.round(value * 100) / 100;

function startKernel(language) {
  const started = performance.now();
  const child = spawn(NODE, [KERNEL, language], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
  const waiting = new Map();
  let pending = '';
  let onReady;
  const ready = new Promise((resolve) => {
    onReady = resolve;
  });
  child.stdio[4].setEncoding('utf8');
  child.stdio[4].on('data', (chunk) => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline !== -1; newline = pending.indexOf('\n')) {
      const event = JSON.parse(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
      if (event.type === 'ready') onReady(performance.now() - started);
      else if (event.type === 'execution-end') waiting.get(event.id)?.();
    }
  });
  let next = 0;
  const execute = (code) => {
    const id = `bench-${++next}`;
    const done = new Promise((resolve) => waiting.set(id, resolve));
    child.stdio[3].write(`${JSON.stringify({ type: 'execute', id, code })}\n`);
    return done;
  };
  return { ready, execute, stop: () => child.kill('SIGKILL') };
}

async function timeRoundTrips(kernel, code, samples) {
  const times = [];
  for (let index = 0; index < samples; index += 1) {
    const started = performance.now();
    await kernel.execute(code);
    times.push(performance.now() - started);
  }
  return round(median(times));
}

const bareStarts = [];
for (let index = 0; index < COLD_SAMPLES; index += 1) {
  const started = performance.now();
  spawnSync(NODE, ['-e', '0']);
  bareStarts.push(performance.now() - started);
}
const rows = {
  node: spawnSync(NODE, ['--version']).stdout.toString().trim(),
  bareNodeStartMs: round(median(bareStarts)),
};
for (const language of ['javascript', 'typescript']) {
  const starts = [];
  for (let index = 0; index < COLD_SAMPLES; index += 1) {
    const kernel = startKernel(language);
    starts.push(await kernel.ready);
    kernel.stop();
  }
  rows[`${language}ColdStartMs`] = round(median(starts));
  const kernel = startKernel(language);
  await kernel.ready;
  const firstStarted = performance.now();
  await kernel.execute('1 + 1');
  rows[`${language}FirstExecutionMs`] = round(performance.now() - firstStarted);
  rows[`${language}WarmOnePlusOneMs`] = await timeRoundTrips(kernel, '1 + 1', WARM_SAMPLES);
  if (language === 'typescript') {
    rows.typescriptTranspiledCellMs = await timeRoundTrips(kernel, 'const n: number = 1; n', TRANSPILED_SAMPLES);
  }
  kernel.stop();
}
console.log(JSON.stringify(rows, null, 2));
