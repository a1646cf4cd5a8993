// The network gate's bench row (alone: `node bench/network-gate.mjs [--quick]`, after `npm run build`):
// the latency the gate adds to a small HTTPS request. Each sample is a whole request on a fresh
// connection — TCP, TLS (verified against a CA made for the run), GET, answer — made directly to an
// HTTPS server on 127.0.0.1 and through a gate (CONNECT, then the same), over TCP and over a unix
// socket. Samples are interleaved so load from other work falls on all three alike.
// Target: p50 through the gate ≤ direct p50 + 2 ms.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parseNetworkPolicy, startGate } from '../dist/network/index.js';
import { measureSandboxPath } from './network-sandbox.mjs';
import { percentile } from './server.mjs';

const now = () => performance.now();
const round = (value, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;
const TARGET_ADDED_MS = 2;
/** The name that reaches a service on this machine's loopback (the gate maps it; nothing is looked up). */
const NAME = 'host.sandcell.internal';

function makeCertificates(directory) {
  const openssl = (...args) => execFileSync('openssl', args, { cwd: directory, stdio: 'pipe' });
  const curve = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...curve,
    '-days',
    '1',
    '-subj',
    '/CN=bench CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  openssl('req', ...curve, '-subj', `/CN=${NAME}`, '-keyout', 'server.key', '-out', 'server.csr');
  writeFileSync(path.join(directory, 'server.ext'), `subjectAltName=DNS:${NAME}\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    'server.ext',
    '-out',
    'server.pem',
  );
  const read = (name) => readFileSync(path.join(directory, name), 'utf8');
  return { ca: read('ca.pem'), key: read('server.key'), cert: read('server.pem') };
}

/** One GET over an established TLS socket, resolved when the server closes. */
function getOver(secure) {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    secure.on('data', (chunk) => {
      bytes += chunk.length;
    });
    secure.on('error', reject);
    secure.on('close', () => (bytes > 0 ? resolve() : reject(new Error('no answer'))));
    secure.write(`GET /small HTTP/1.1\r\nHost: ${NAME}\r\nConnection: close\r\n\r\n`);
  });
}

function secureOver(options, ca) {
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ ...options, servername: NAME, ca });
    secure.once('secureConnect', () => resolve(secure));
    secure.once('error', reject);
  });
}

async function direct(port, ca) {
  await getOver(await secureOver({ host: '127.0.0.1', port }, ca));
}

async function throughGate(gateAddress, port, ca) {
  const socket =
    typeof gateAddress === 'string'
      ? net.connect({ path: gateAddress })
      : net.connect(gateAddress.port, gateAddress.address);
  socket.setNoDelay(true);
  socket.write(`CONNECT ${NAME}:${port} HTTP/1.1\r\nHost: ${NAME}:${port}\r\n\r\n`);
  await new Promise((resolve, reject) => {
    let head = '';
    const onData = (chunk) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      if (head.startsWith('HTTP/1.1 200')) resolve();
      else reject(new Error(head.split('\r\n')[0]));
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
  await getOver(await secureOver({ socket }, ca));
}

export async function runNetworkGateBench({ quick = false } = {}) {
  const runs = quick ? 200 : 1000;
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-gate-'));
  const { ca, key, cert } = makeCertificates(directory);
  const server = https.createServer({ key, cert }, (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
    response.end('ok');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  const policy = parseNetworkPolicy([`${NAME}:${port}`]);
  const limits = { maxConnections: 4 };
  const tcpGate = await startGate({
    sessionId: 'bench',
    policy,
    limits,
    listen: { host: '127.0.0.1', port: 0 },
  });
  const unixGate = await startGate({
    sessionId: 'bench',
    policy,
    limits,
    listen: { path: path.join(directory, 'gate.sock') },
  });
  const times = { direct: [], tcp: [], unix: [] };
  let sandboxPath;
  try {
    for (let sample = -50; sample < runs; sample++) {
      const kinds = [
        ['direct', () => direct(port, ca)],
        ['tcp', () => throughGate(tcpGate.address, port, ca)],
        ['unix', () => throughGate(unixGate.address, port, ca)],
      ];
      // Each kind goes first, second and third in turn, so none always follows the same work.
      const shift = ((sample % 3) + 3) % 3;
      for (const [name, run] of [...kinds.slice(shift), ...kinds.slice(0, shift)]) {
        const started = now();
        await run();
        if (sample >= 0) times[name].push(now() - started);
      }
    }
    sandboxPath = await measureSandboxPath({ port, ca, caPath: path.join(directory, 'ca.pem'), quick });
  } finally {
    await tcpGate.close();
    await unixGate.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(directory, { recursive: true, force: true });
  }
  const p = percentile;
  const added = (name) => p(times[name], 0.5) - p(times.direct, 0.5);
  const rows = [
    [
      'network gate: added latency, small HTTPS request (unix socket)',
      'p50',
      round(added('unix')),
      'ms',
      `≤ ${TARGET_ADDED_MS}`,
      added('unix') <= TARGET_ADDED_MS,
    ],
    ['', 'added over TCP p50', round(added('tcp')), 'ms', `≤ ${TARGET_ADDED_MS}`, added('tcp') <= TARGET_ADDED_MS],
    ['', 'direct p50', round(p(times.direct, 0.5)), 'ms', '', null],
    ['', 'through the gate (unix) p50', round(p(times.unix, 0.5)), 'ms', '', null],
    ['', 'through the gate (unix) p95', round(p(times.unix, 0.95)), 'ms', '', null],
  ];
  const summary = (values) => ({ p50: p(values, 0.5), p95: p(values, 0.95), samples: values.length });
  rows.push(...sandboxPathRows(sandboxPath));
  const result = {
    directMs: summary(times.direct),
    throughGateTcpMs: summary(times.tcp),
    throughGateUnixMs: summary(times.unix),
    addedP50Ms: { tcp: added('tcp'), unix: added('unix') },
    sandboxPath: sandboxPath.skipped
      ? { skipped: sandboxPath.skipped }
      : {
          hostDirectMs: summary(sandboxPath.direct),
          hostThroughGateTcpMs: summary(sandboxPath.hostGate),
          sandboxThroughForwarderAndGateMs: summary(sandboxPath.sandbox),
          sandboxStraightToGateSocketMs: summary(sandboxPath.sandboxSocket),
          addedP50Ms: p(sandboxPath.sandbox, 0.5) - p(sandboxPath.direct, 0.5),
        },
  };
  return { rows, result };
}

/** The whole path from inside a sandbox (bench/network-sandbox.mjs), against the host's direct request. */
function sandboxPathRows(measured) {
  const title = 'network: sandbox → forwarder → gate → server, small HTTPS request (Python client)';
  if (measured.skipped) return [[title, 'skipped', measured.skipped, '', '', null]];
  const p = percentile;
  const added = p(measured.sandbox, 0.5) - p(measured.direct, 0.5);
  return [
    [title, 'added over host direct p50', round(added), 'ms', `≤ ${TARGET_ADDED_MS}`, added <= TARGET_ADDED_MS],
    ['', 'host direct p50', round(p(measured.direct, 0.5)), 'ms', '', null],
    ['', 'host through the gate (TCP) p50', round(p(measured.hostGate, 0.5)), 'ms', '', null],
    ['', 'sandbox through forwarder and gate p50', round(p(measured.sandbox, 0.5)), 'ms', '', null],
    ['', 'sandbox through forwarder and gate p95', round(p(measured.sandbox, 0.95)), 'ms', '', null],
    ['', "sandbox straight to the gate's socket p50", round(p(measured.sandboxSocket, 0.5)), 'ms', '', null],
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runNetworkGateBench({ quick: process.argv.includes('--quick') });
  for (const row of rows) {
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  }
  console.log(JSON.stringify(result, null, 2));
}
