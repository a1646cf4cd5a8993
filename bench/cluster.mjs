// Several nodes as one service (the Kubernetes issue's targets), on bubblewrap, with real
// `sandcell serve` processes on 127.0.0.1 sharing a store directory:
// - what forwarding adds: `1 + 1` on a session of node A, sent to A and to B (which forwards it to
//   A) alternately over HTTP, and the same for reading the session (no sandbox work); target ≤ 1 ms
//   at p50;
// - a drain: node C holding 100 idle sessions (each with a variable) gets SIGTERM; the time until
//   it has paused them all and exited; target ≤ 30 s;
// - a moved session: the first execution of a session C paused, sent to A (which resumes it);
//   target ≤ 1 s (p50 and the slowest).
// Run by bench/run.mjs (with the server rows), or alone: `node bench/cluster.mjs [--quick]`.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(here, '..', 'bin', 'sandcell.js');
const KEY = 'bench-cluster-key-0123456789';
const now = () => performance.now();
const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const percentile = (values, fraction) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(fraction * values.length))];

async function freePort() {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startNode(scratch, store, secret, name, extra = []) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--port',
      String(port),
      '--preload',
      'none',
      '--no-ui',
      '--state-dir',
      mkdtempSync(path.join(scratch, `${name}-`)),
      '--store',
      store,
      '--advertise-url',
      url,
      '--log-format',
      'json',
      // The bench sends more executions a minute than a key may start by default.
      '--executions-per-minute',
      '0',
      ...extra,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SANDCELL_API_KEYS: KEY, SANDCELL_NODE_NAME: name, SANDCELL_SNAPSHOT_SECRET: secret },
    },
  );
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"a node of the cluster"')) resolve();
    });
    void exited.then((code) => reject(new Error(`${name} exited (${code})`)));
  });
  return { name, url, child, exited };
}

async function call(node, route, body) {
  const response = await fetch(`${node.url}${route}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${route} → ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Until `node` sees every one of `peers` alive. */
async function peered(node, peers) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const metrics = await (await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text();
    if (peers.every((peer) => metrics.includes(`sandcell_cluster_peer_alive{peer="${peer.name}"} 1`))) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${node.name} does not see its peers`);
}

export async function runClusterBench({ quick }) {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-cluster-'));
  const store = `fs://${path.join(scratch, 'store')}`;
  const secret = randomBytes(32).toString('hex');
  const nodes = [];
  try {
    const a = await startNode(scratch, store, secret, 'bench-a', ['--pool-size', '4']);
    const b = await startNode(scratch, store, secret, 'bench-b', ['--pool-size', '1']);
    nodes.push(a, b);
    await Promise.all([peered(a, [b]), peered(b, [a])]);

    // What forwarding adds: the same session, asked directly and through a peer, alternately.
    const session = await call(a, '/v1/sessions', {});
    const direct = [];
    const forwarded = [];
    const samples = quick ? 50 : 300;
    for (let index = 0; index < samples + 20; index++) {
      for (const [node, times] of [
        [a, direct],
        [b, forwarded],
      ]) {
        const started = now();
        const run = await call(node, `/v1/sessions/${session.id}/executions`, { code: '1 + 1' });
        const elapsed = now() - started;
        if (run.results[0]?.data['text/plain'] !== '2') throw new Error('wrong result');
        if (index >= 20) times.push(elapsed);
      }
    }
    // The same for a request with no sandbox work: the session's description.
    const directRead = [];
    const forwardedRead = [];
    for (let index = 0; index < samples * 3 + 20; index++) {
      for (const [node, times] of [
        [a, directRead],
        [b, forwardedRead],
      ]) {
        const started = now();
        const read = await call(node, `/v1/sessions/${session.id}`);
        const elapsed = now() - started;
        if (read.id !== session.id) throw new Error('wrong session');
        if (index >= 20) times.push(elapsed);
      }
    }

    // A drain: C holds idle sessions, each with a variable, and gets SIGTERM.
    const count = quick ? 20 : 100;
    const c = await startNode(scratch, store, secret, 'bench-c', [
      '--pool-size',
      '2',
      '--max-sessions',
      '128',
      '--sessions-per-key',
      '128',
    ]);
    nodes.push(c);
    await Promise.all([peered(a, [b, c]), peered(c, [a, b])]);
    const held = [];
    for (let index = 0; index < count; index++) {
      const created = await call(c, '/v1/sessions', {});
      await call(c, `/v1/sessions/${created.id}/executions`, { code: `x = ${index}` });
      held.push({ id: created.id, value: index });
    }
    const signalled = now();
    c.child.kill('SIGTERM');
    const code = await c.exited;
    const drainSeconds = (now() - signalled) / 1000;
    if (code !== 0) throw new Error(`bench-c exited with ${code}`);

    // Moved sessions: each one's first execution after the drain, through A.
    const moved = [];
    for (const { id, value } of held.slice(0, quick ? 5 : 20)) {
      const started = now();
      const run = await call(a, `/v1/sessions/${id}/executions`, { code: 'print(x)' });
      moved.push(now() - started);
      if (run.stdout !== `${value}\n`) throw new Error(`moved session ${id}: ${JSON.stringify(run)}`);
    }

    const directMs = percentile(direct, 0.5);
    const forwardedMs = percentile(forwarded, 0.5);
    const addedMs = forwardedMs - directMs;
    const readAddedMs = percentile(forwardedRead, 0.5) - percentile(directRead, 0.5);
    const movedP50 = percentile(moved, 0.5);
    const movedMax = Math.max(...moved);
    return {
      result: {
        directMs,
        forwardedMs,
        addedMs,
        readAddedMs,
        samples,
        drain: { sessions: count, seconds: drainSeconds },
        moved: { p50Ms: movedP50, maxMs: movedMax, samples: moved.length },
      },
      rows: [
        ['cluster: `1 + 1` sent to its node', 'p50', round(directMs), 'ms', '', null],
        ['cluster: `1 + 1` through another node (forwarded)', 'p50', round(forwardedMs), 'ms', '', null],
        ['cluster: added by forwarding (`1 + 1`)', 'p50', round(addedMs), 'ms', '≤ 1', addedMs <= 1],
        ['cluster: added by forwarding (GET the session)', 'p50', round(readAddedMs), 'ms', '≤ 1', readAddedMs <= 1],
        [
          `cluster: drain of a node with ${count} idle sessions`,
          'total',
          round(drainSeconds, 1),
          's',
          '≤ 30',
          drainSeconds <= 30,
        ],
        ['cluster: a moved session’s next execution', 'p50', round(movedP50), 'ms', '≤ 1000', movedP50 <= 1000],
        ['cluster: a moved session’s next execution', 'max', round(movedMax), 'ms', '≤ 1000', movedMax <= 1000],
      ],
    };
  } finally {
    for (const node of nodes) node.child.kill('SIGKILL');
    await Promise.all(nodes.map((node) => node.exited));
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runClusterBench({ quick: process.argv.includes('--quick') });
  for (const row of rows) console.log(row.join('\t'));
  console.log(JSON.stringify(result));
}
