// The E2B front door's part of `npm run bench` (also runnable alone: `node bench/e2b.mjs [--quick]`).
// Starts `sandcell serve` as a child process on 127.0.0.1 with one API key in E2B's format and drives
// it with the unmodified E2B SDK (`@e2b/code-interpreter`), configured only by E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY, beside sandcell's own API on the same server:
//   - `Sandbox.create()` → first `runCode('1+1')` result with a warm pool (target p50 ≤ 30 ms),
//   - a warm `runCode('1+1')` (target p50 ≤ 5 ms), and /v1's warm execution for comparison;
//   - the same two with E2B's Python SDK (`e2b-code-interpreter`, bench/e2b_python.py), in the
//     environment `npm run setup` installs for the Python clients' tests (test/python/venvs/clients).
// Every request goes to 127.0.0.1 only; loops are bounded in count. A sample that fails is counted.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { percentile, startServer } from './server.mjs';

const now = () => performance.now();
const KEY = 'e2b_00112233445566778899aabbccddeeff';

const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

const startE2bServer = () =>
  startServer(['--pool-size', '2', '--executions-per-minute', '0'], { SANDCELL_API_KEYS: KEY });

async function waitForWarmPool(url) {
  for (let waited = 0; waited < 600; waited++) {
    const health = await (await fetch(`${url}/healthz`)).json();
    if (health.sessions.warm >= 2) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function createToFirstResult(Sandbox, url, samples, failures) {
  const times = [];
  for (let index = 0; index < samples; index++) {
    let sandbox;
    try {
      await waitForWarmPool(url);
      const started = now();
      sandbox = await Sandbox.create();
      const execution = await sandbox.runCode('1+1');
      times.push(now() - started);
      if (execution.text !== '2') throw new Error('create → first result: wrong result');
    } catch (error) {
      failures.add(error);
    }
    await sandbox?.kill().catch((error) => failures.add(error));
  }
  return times;
}

async function warmRunCode(Sandbox, runs, failures) {
  const times = [];
  let sandbox;
  try {
    sandbox = await Sandbox.create();
    for (let index = 0; index < 100; index++) await sandbox.runCode('1+1');
    for (let index = 0; index < runs; index++) {
      const started = now();
      const execution = await sandbox.runCode('1+1');
      times.push(now() - started);
      if (execution.text !== '2') throw new Error('warm runCode: wrong result');
    }
  } catch (error) {
    failures.add(error);
  }
  await sandbox?.kill().catch((error) => failures.add(error));
  return times;
}

/** sandcell's own API on the same server, for the comparison row. */
async function warmV1Execution(url, runs, failures) {
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const times = [];
  let session;
  try {
    session = await (await fetch(`${url}/v1/sessions`, { method: 'POST', headers })).json();
    const run = async () => {
      const response = await fetch(`${url}/v1/sessions/${session.id}/executions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ code: '1+1' }),
      });
      return response.json();
    };
    for (let index = 0; index < 100; index++) await run();
    for (let index = 0; index < runs; index++) {
      const started = now();
      const execution = await run();
      times.push(now() - started);
      if (execution.results?.[0]?.data['text/plain'] !== '2') throw new Error('/v1 warm execution: wrong result');
    }
  } catch (error) {
    failures.add(error);
  }
  if (session?.id)
    await fetch(`${url}/v1/sessions/${session.id}`, { method: 'DELETE', headers }).catch(() => undefined);
  return times;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PYTHON = path.join(HERE, '..', 'test', 'python', 'venvs', 'clients', 'bin', 'python');

/** The Python SDK's two measures (bench/e2b_python.py), on the same server and environment variables. */
async function pythonSdk(url, firstSamples, warmRuns, failures) {
  if (!existsSync(PYTHON)) {
    failures.add(new Error(`${PYTHON} is missing: \`npm run setup\` installs it`));
    return { first: [], warm: [] };
  }
  try {
    const { stdout } = await promisify(execFile)(
      PYTHON,
      [path.join(HERE, 'e2b_python.py'), url, String(firstSamples), String(warmRuns)],
      { timeout: 10 * 60_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const measured = JSON.parse(stdout.trim().split('\n').at(-1));
    for (let index = 0; index < measured.failures.count; index++) failures.add(new Error(measured.failures.first));
    return measured;
  } catch (error) {
    failures.add(error);
    return { first: [], warm: [] };
  }
}

export async function runE2bBench({ quick = false } = {}) {
  const server = await startE2bServer();
  process.env.E2B_API_URL = `${server.url}/e2b`;
  process.env.E2B_SANDBOX_URL = `${server.url}/e2b`;
  process.env.E2B_API_KEY = KEY;
  delete process.env.E2B_DEBUG;
  delete process.env.E2B_DOMAIN;
  const { Sandbox } = await import('@e2b/code-interpreter');
  const failures = { count: 0, first: undefined };
  failures.add = (error) => {
    failures.count++;
    failures.first ??= error?.message ?? String(error);
  };
  let first;
  let warm;
  let native;
  let python = { first: [], warm: [] };
  try {
    first = await createToFirstResult(Sandbox, server.url, quick ? 5 : 20, failures);
    warm = await warmRunCode(Sandbox, quick ? 200 : 1000, failures);
    native = await warmV1Execution(server.url, quick ? 200 : 1000, failures);
    python = await pythonSdk(server.url, quick ? 5 : 20, quick ? 200 : 1000, failures);
  } finally {
    await server.stop();
  }
  const p = percentile;
  const stat = (measure, name, value, unit, target, met) => [measure, name, value, unit, target ?? '', met ?? null];
  const rows = [
    stat(
      'E2B SDK: Sandbox.create() → first runCode result (warm pool)',
      'p50',
      round(p(first, 0.5), 2),
      'ms',
      '≤ 30',
      p(first, 0.5) <= 30,
    ),
    stat('', 'p95', round(p(first, 0.95), 2), 'ms'),
    stat("E2B SDK: warm runCode('1+1')", 'p50', round(p(warm, 0.5), 3), 'ms', '≤ 5', p(warm, 0.5) <= 5),
    stat('', 'p95', round(p(warm, 0.95), 3), 'ms'),
    stat('beside it: /v1 warm execution, same server', 'p50', round(p(native, 0.5), 3), 'ms'),
    stat('', 'p95', round(p(native, 0.95), 3), 'ms'),
    stat(
      'E2B Python SDK: Sandbox.create() → first run_code result (warm pool)',
      'p50',
      round(p(python.first, 0.5), 2),
      'ms',
    ),
    stat('', 'p95', round(p(python.first, 0.95), 2), 'ms'),
    stat("E2B Python SDK: warm run_code('1+1')", 'p50', round(p(python.warm, 0.5), 3), 'ms'),
    stat('', 'p95', round(p(python.warm, 0.95), 3), 'ms'),
    stat('E2B SDKs: the measures above', 'failed samples', failures.count, '', '0', failures.count === 0),
  ];
  const result = {
    createToFirstResultMs: { p50: p(first, 0.5), p95: p(first, 0.95), samples: first.length },
    warmRunCodeMs: { p50: p(warm, 0.5), p95: p(warm, 0.95), p99: p(warm, 0.99), samples: warm.length },
    v1WarmExecutionMs: { p50: p(native, 0.5), p95: p(native, 0.95), samples: native.length },
    pythonCreateToFirstResultMs: {
      p50: p(python.first, 0.5),
      p95: p(python.first, 0.95),
      samples: python.first.length,
    },
    pythonWarmRunCodeMs: { p50: p(python.warm, 0.5), p95: p(python.warm, 0.95), samples: python.warm.length },
    failedSamples: failures.count,
    ...(failures.first ? { firstFailure: failures.first } : {}),
  };
  return { rows, result };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runE2bBench({ quick: process.argv.includes('--quick') });
  for (const row of rows)
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  console.log(JSON.stringify(result, null, 2));
}
