// The whole path a sandbox's request takes (rows of bench/network-gate.mjs): a small HTTPS request made
// from inside a real bubblewrap sandbox, through its forwarder (127.0.0.1:3128 in the sandbox) and the
// session's gate (its unix socket) to an HTTPS server on the host, against the same request made on the
// host straight to the server, and on the host through a gate on TCP (the gate alone, same client).
// A sandbox has no route to the server, so there is no in-sandbox direct baseline. The client is the
// same Python (bench/network-sandbox.py) in all three, timing where the request is made; batches of
// each kind alternate so load from other work falls on all alike.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBackend, Session } from '../dist/index.js';
import { createGateHost, parseNetworkPolicy, startGate } from '../dist/network/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLIENT = readFileSync(path.join(here, 'network-sandbox.py'), 'utf8');
const BATCH = 50;
/** The gate's socket inside a sandbox (src/network/sandbox-proxy.ts): the forwarder's other end. */
const GATE_SOCKET = '/run/sandcell/gate.sock';

/** A Python on the host that runs the client's `measure` for each JSON line it reads. */
function hostClient() {
  const child = spawn(
    'python3',
    [
      '-u',
      '-c',
      `${CLIENT}\nimport json, sys\nfor line in sys.stdin:\n    print(json.dumps(measure(**json.loads(line))), flush=True)\n`,
    ],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const waiting = [];
  let buffered = '';
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      waiting.shift()(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
  });
  return {
    measure: (request) =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin.write(`${JSON.stringify(request)}\n`);
      }),
    close: () => child.stdin.end(),
  };
}

/**
 * `{ direct, hostGate, sandbox }`: milliseconds per request, or undefined when no bubblewrap sandbox can
 * start here (the reason is returned instead).
 */
export async function measureSandboxPath({ port, ca, caPath, quick }) {
  const runs = quick ? 100 : 500;
  const policy = [`host.sandcell.internal:${port}`];
  const gate = createGateHost({ limits: { maxConnections: 4 } });
  const tcpGate = await startGate({
    sessionId: 'bench-host',
    policy: parseNetworkPolicy(policy),
    limits: { maxConnections: 4 },
    listen: { host: '127.0.0.1', port: 0 },
  });
  const host = hostClient();
  let session;
  try {
    session = await Session.create({
      backend: createBackend('bubblewrap'),
      network: { allow: policy, trustedCertificates: ca },
      networkGate: gate,
    });
  } catch (error) {
    host.close();
    await tcpGate.close();
    return { skipped: (error instanceof Error ? error.message : String(error)).split('\n')[0] };
  }
  const times = { direct: [], hostGate: [], sandbox: [], sandboxSocket: [] };
  try {
    const defined = await session.run(CLIENT);
    if (defined.error) throw new Error(`the client did not load in the sandbox: ${defined.error.message}`);
    const inSandbox = async (count, proxy) => {
      const result = await session.run(
        `import json, os\nprint(json.dumps(measure(${count}, os.environ["SSL_CERT_FILE"], ${port}, ${proxy})))`,
        { timeoutMs: 300_000 },
      );
      if (result.error) throw new Error(`in the sandbox: ${result.error.name}: ${result.error.message}`);
      return JSON.parse(result.stdout);
    };
    const gateProxy = [tcpGate.address.address, tcpGate.address.port];
    for (let done = 0; done < runs; done += BATCH) {
      times.direct.push(...(await host.measure({ count: BATCH, cafile: caPath, port })));
      times.hostGate.push(...(await host.measure({ count: BATCH, cafile: caPath, port, proxy: gateProxy })));
      times.sandbox.push(...(await inSandbox(BATCH, '("127.0.0.1", 3128)')));
      times.sandboxSocket.push(...(await inSandbox(BATCH, JSON.stringify(GATE_SOCKET))));
    }
  } finally {
    await session.close();
    host.close();
    await tcpGate.close();
  }
  return times;
}
