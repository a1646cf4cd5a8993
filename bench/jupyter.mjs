// The Jupyter front door's bench row (alone: `node bench/jupyter.mjs [--quick]`, after `npm run build`):
// a warm `1+1` over the channels websocket (JSON frames, timed from the request to the kernel's idle
// status, as Jupyter clients wait), beside sandcell's own HTTP round trip (/v1) on the same server
// and a raw local ipykernel driven by jupyter_client (bench/raw-ipykernel.py; Debian's
// python3-ipykernel). Target: the websocket's p50 ≤ the raw ipykernel's. Everything on 127.0.0.1.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { percentile, startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const now = () => performance.now();
const round = (value, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;
const WARM_UP_RUNS = 100;

async function json(url, method = 'GET', body) {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url} → ${response.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function websocketRoundTrips(server, runs) {
  const kernel = await json(`${server.url}/jupyter/api/kernels`, 'POST', { name: 'python3' });
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/jupyter/api/kernels/${kernel.id}/channels`);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  let waiting;
  socket.on('message', (data) => {
    const frame = JSON.parse(String(data));
    if (frame.msg_type === 'execute_result' && frame.parent_header.msg_id === waiting?.id) {
      waiting.result = frame.content.data['text/plain'];
    }
    if (
      frame.msg_type === 'status' &&
      frame.content.execution_state === 'idle' &&
      frame.parent_header.msg_id === waiting?.id
    ) {
      waiting.resolve(waiting.result);
    }
  });
  const once = () =>
    new Promise((resolve) => {
      const id = randomUUID();
      waiting = { id, resolve };
      const header = {
        msg_id: id,
        msg_type: 'execute_request',
        session: 'bench',
        username: 'bench',
        date: '',
        version: '5.3',
      };
      socket.send(
        JSON.stringify({ header, parent_header: {}, metadata: {}, content: { code: '1+1' }, channel: 'shell' }),
      );
    });
  const times = [];
  try {
    for (let index = 0; index < WARM_UP_RUNS; index++) await once();
    for (let index = 0; index < runs; index++) {
      const started = now();
      const result = await once();
      times.push(now() - started);
      if (result !== '2') throw new Error(`websocket round trip: got ${result}`);
    }
  } finally {
    socket.close();
    await json(`${server.url}/jupyter/api/kernels/${kernel.id}`, 'DELETE');
  }
  return times;
}

async function httpRoundTrips(server, runs) {
  const session = await json(`${server.url}/v1/sessions`, 'POST');
  const target = `${server.url}/v1/sessions/${session.id}/executions`;
  const times = [];
  try {
    for (let index = 0; index < WARM_UP_RUNS; index++) await json(target, 'POST', { code: '1+1' });
    for (let index = 0; index < runs; index++) {
      const started = now();
      await json(target, 'POST', { code: '1+1' });
      times.push(now() - started);
    }
  } finally {
    await json(`${server.url}/v1/sessions/${session.id}`, 'DELETE');
  }
  return times;
}

function rawIpykernelRoundTrips(runs) {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', [path.join(here, 'raw-ipykernel.py'), String(runs)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      // ipykernel's debugger otherwise warns about frozen modules on every start.
      env: { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: '1' },
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`raw ipykernel exited ${code}`)),
    );
  });
}

export async function runJupyterBench({ quick = false } = {}) {
  const runs = quick ? 200 : 1000;
  const server = await startServer(['--pool-size', '1', '--executions-per-minute', '0']);
  let websocket;
  let http;
  try {
    websocket = await websocketRoundTrips(server, runs);
    http = await httpRoundTrips(server, runs);
  } finally {
    await server.stop();
  }
  const raw = await rawIpykernelRoundTrips(runs);
  const p = percentile;
  const met = p(websocket, 0.5) <= p(raw, 0.5);
  const rows = [
    [
      'jupyter: warm 1+1 over the channels websocket',
      'p50',
      round(p(websocket, 0.5)),
      'ms',
      `≤ raw ipykernel (${round(p(raw, 0.5))})`,
      met,
    ],
    ['', 'p95', round(p(websocket, 0.95)), 'ms', '', null],
    ['', 'sandcell HTTP (/v1) p50', round(p(http, 0.5)), 'ms', '', null],
    ['', 'raw local ipykernel p50', round(p(raw, 0.5)), 'ms', '', null],
    ['', 'raw local ipykernel p95', round(p(raw, 0.95)), 'ms', '', null],
  ];
  const result = {
    websocketRoundTripMs: { p50: p(websocket, 0.5), p95: p(websocket, 0.95), samples: websocket.length },
    httpRoundTripMs: { p50: p(http, 0.5), p95: p(http, 0.95), samples: http.length },
    rawIpykernelRoundTripMs: { p50: p(raw, 0.5), p95: p(raw, 0.95), samples: raw.length },
  };
  return { rows, result };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runJupyterBench({ quick: process.argv.includes('--quick') });
  for (const row of rows) {
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  }
  console.log(JSON.stringify(result, null, 2));
}
