// A custom environment's bench row (alone: `node bench/environment.mjs [--quick]`, after `npm run build`):
// a session from a warm pool of the README's example environment (examples/environment: python3-toolz
// warm-imported, a file, a variable) → first result of 1+1, beside the same for the default environment,
// measured the same way as run.mjs's pool row (a pool of 2, warm again before each sample), one sample of
// each in turn so load from other work falls on both alike. On bubblewrap. The environment is built first
// if it is not (once: builds are content-addressed, so later runs reuse it), in a store of the bench's own
// beside the machine's (`<image store>/bench-environments`, or SANDCELL_ENVIRONMENT_DIR when set), so that
// the machine's `env list`, kernelspecs and doctor never show it; without root it cannot be built, and the
// row says skipped and why. Then the cost of a small layer: a one-file environment built anew (its file's
// bytes are new each run, so nothing is reused), its build time and the disk it adds (what it does not
// share with the runtime's root filesystem), removed after.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildEnvironment } from '../dist/environments/build.js';
import { readRecord, removeEnvironmentFromStore } from '../dist/environments/store.js';
import { runtimeStoreDirectory } from '../dist/image/recipe.js';
import { SessionPool } from '../dist/index.js';
import { percentile } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const DESCRIPTION = path.join(here, '..', 'examples', 'environment', 'sandcell.env.json');
const MEASURE = 'session from a warm pool of a custom environment → first result';
const LAYER_MEASURE = 'build of a one-file environment layer (bubblewrap)';
const LAYER_NAME = 'bench-one-file';
const now = () => performance.now();
const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Builds examples/environment unless built; says which (or throws why it cannot). */
async function ensureBuilt(log) {
  const started = now();
  const built = await buildEnvironment({ file: DESCRIPTION, backend: 'bubblewrap' });
  log(
    built.reused
      ? `environment bench: ${built.name} (${built.hash}) already built, reused`
      : `environment bench: built ${built.name} (${built.hash}) in ${Math.round((now() - started) / 1000)} s (once; reused from now on)`,
  );
  return built.name;
}

/** Builds a one-file layer anew and removes it: seconds, and the bytes it adds beside the runtime. */
async function measureLayerBuild() {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-layer-'));
  chmodSync(directory, 0o755);
  const store = process.env.SANDCELL_ENVIRONMENT_DIR;
  try {
    writeFileSync(path.join(directory, 'one.txt'), `${randomBytes(16).toString('hex')}\n`);
    const file = path.join(directory, 'sandcell.env.json');
    writeFileSync(
      file,
      JSON.stringify({
        name: LAYER_NAME,
        network: 'none',
        files: [{ source: 'one.txt', target: `/usr/share/${LAYER_NAME}/one.txt` }],
      }),
    );
    const started = now();
    const built = await buildEnvironment({ file, backend: 'bubblewrap' });
    const seconds = (now() - started) / 1000;
    const record = await readRecord(store, LAYER_NAME, built.hash);
    return { seconds, addedBytes: record?.builds.bubblewrap?.sizeBytes };
  } finally {
    await removeEnvironmentFromStore(store, LAYER_NAME).catch(() => undefined);
    rmSync(directory, { recursive: true, force: true });
  }
}

async function startPool(environmentName) {
  const pool = new SessionPool({
    size: 2,
    maxSessions: 8,
    sessionOptions: { backend: 'bubblewrap', ...(environmentName ? { environmentName } : {}) },
  });
  await pool.start();
  return pool;
}

/** One sample, as run.mjs's pool row takes it: wait until warm, then acquire → 1+1 → its result. */
async function sample(pool) {
  for (let waited = 0; waited < 1500 && pool.stats().warm < 2; waited++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const started = now();
  const session = await pool.acquire();
  try {
    const execution = await session.run('1+1');
    if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('pool: wrong result');
    return now() - started;
  } finally {
    await session.close();
  }
}

export async function runEnvironmentBench(options = {}) {
  // Sessions and builds read the store from the variable when they need it: set for this bench only.
  const callersStore = process.env.SANDCELL_ENVIRONMENT_DIR;
  process.env.SANDCELL_ENVIRONMENT_DIR = callersStore ?? path.join(runtimeStoreDirectory(), 'bench-environments');
  try {
    return await measure(options);
  } finally {
    if (callersStore === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
    else process.env.SANDCELL_ENVIRONMENT_DIR = callersStore;
  }
}

async function measure({ quick, log = console.error }) {
  let name;
  try {
    name = await ensureBuilt(log);
  } catch (error) {
    const reason = error.message.split('\n')[0];
    return { rows: [[MEASURE, 'p50', `skipped — ${reason}`, '', '', null]], result: { skipped: reason } };
  }
  const samples = quick ? 5 : 20;
  const pools = { custom: await startPool(name), default: await startPool(undefined) };
  const times = { custom: [], default: [] };
  let failures = 0;
  let firstFailure;
  try {
    for (let index = 0; index < samples; index++) {
      const order = index % 2 === 0 ? ['custom', 'default'] : ['default', 'custom'];
      for (const kind of order) {
        try {
          times[kind].push(await sample(pools[kind]));
        } catch (error) {
          failures++;
          firstFailure ??= error.message;
        }
      }
    }
  } finally {
    await Promise.all(Object.values(pools).map((pool) => pool.close()));
  }
  const p = (kind, fraction) => (times[kind].length ? round(percentile(times[kind], fraction)) : '');
  const layer = await measureLayerBuild();
  const rows = [
    [`${MEASURE} (${name}, bubblewrap)`, 'p50', p('custom', 0.5), 'ms', '', null],
    ['', 'p95', p('custom', 0.95), 'ms', '', null],
    ['', 'default environment, same run, p50', p('default', 0.5), 'ms', '', null],
    ['', 'failed samples', failures, '', '0', failures === 0],
    [LAYER_MEASURE, 'build time', round(layer.seconds, 1), 's', '', null],
    [
      '',
      'disk it adds (beside the runtime)',
      layer.addedBytes === undefined ? '' : round(layer.addedBytes / 2 ** 20, 0),
      'MiB',
      '',
      null,
    ],
  ];
  const summary = (values) => ({ p50: percentile(values, 0.5), p95: percentile(values, 0.95), samples: values.length });
  const result = {
    environment: name,
    customMs: summary(times.custom),
    defaultMs: summary(times.default),
    failedSamples: failures,
    ...(firstFailure ? { firstFailure } : {}),
    oneFileLayer: layer,
  };
  return { rows, result };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runEnvironmentBench({ quick: process.argv.includes('--quick') });
  for (const row of rows) {
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  }
  console.log(JSON.stringify(result, null, 2));
}
