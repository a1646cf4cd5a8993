// Apps on ports (docs/ports.md): part of `npm run bench`, also alone: `node bench/ports.mjs [--quick]`.
// Starts `sandcell serve` on 127.0.0.1 with one key in E2B's format, creates a sandbox with the unmodified
// E2B SDK, and starts the ports tests' app in it (test/fixtures/ports/app.py, on port 3000). Then:
//   - a small GET through the server by the sandbox's host name (a kept-alive connection, as a browser's),
//     beside the same GET made inside the sandbox over its own loopback: the added latency (target p50 ≤ 1 ms);
//   - a 100 MB download through the URL beside the same download inside the sandbox (target ≥ 50% of its
//     throughput), with the server's resident memory sampled while it runs (bounded: a chunk or so per direction);
//   - 100 WebSocket connections to the sandbox echoing at once: all answered, and the server's memory meanwhile.
// Every request goes to 127.0.0.1 only; loops are bounded in count. A sample that fails is counted.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { percentile, startServer } from './server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const APP = readFileSync(path.join(HERE, '..', 'test', 'fixtures', 'ports', 'app.py'), 'utf8');
const KEY = 'e2b_00112233445566778899aabbccddeeff';
const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const now = () => performance.now();

/** Resident memory of a process, in MB (Linux). */
export function rssMB(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Samples `pid`'s RSS every 50 ms while `work` runs; the work's value and the peak. */
export async function withPeakMemory(pid, work) {
  let peak = rssMB(pid) ?? 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMB(pid) ?? 0);
  }, 50);
  try {
    return { value: await work(), peakMB: peak };
  } finally {
    clearInterval(timer);
  }
}

/** A GET of `path` by the sandbox's host name on a kept-alive connection; resolves with the body's length. */
function get(agent, port, host, path) {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, headers: { host }, agent }, (response) => {
      let bytes = 0;
      response.on('data', (chunk) => {
        bytes += chunk.length;
      });
      response.on('end', () =>
        response.statusCode === 200 ? resolve(bytes) : reject(new Error(`GET ${path} → ${response.statusCode}`)),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/** What the same requests take inside the sandbox, over its own loopback (Python's http.client, kept alive). */
const INSIDE = `
import http.client, json, time
def timed(path, count):
    connection = http.client.HTTPConnection("127.0.0.1", 3000)
    times, size = [], 0
    for _ in range(count):
        started = time.perf_counter()
        connection.request("GET", path)
        answer = connection.getresponse()
        size = len(answer.read())
        times.append((time.perf_counter() - started) * 1000)
    return times, size
small, _ = timed("/headers", SMALL)
big, size = timed("/big?n=1600", 3)
print(json.dumps({"small": small, "bigMs": big, "bigBytes": size}))
`;

async function echoAtOnce(host, connections, messages) {
  const lookup = (_name, options, callback) => {
    if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
  };
  const one = (index) =>
    new Promise((resolve, reject) => {
      const socket = new WebSocket(`ws://${host}/ws`, { lookup });
      let answered = 0;
      socket.on('open', () => socket.send(`${index}:0`));
      socket.on('message', (data) => {
        if (String(data) !== `echo:${index}:${answered}`) reject(new Error(`WebSocket ${index}: wrong echo ${data}`));
        answered += 1;
        if (answered < messages) socket.send(`${index}:${answered}`);
        else socket.close();
      });
      socket.on('close', () => resolve(answered));
      socket.on('error', reject);
    });
  const started = now();
  const answered = await Promise.all(Array.from({ length: connections }, (_, index) => one(index)));
  return { answered: answered.reduce((sum, count) => sum + count, 0), ms: now() - started };
}

/**
 * `sandcell serve` with one key in E2B's format, the E2B SDK pointed at it, and a tally of failed
 * samples (`fail` counts one, keeping the first's message): what the E2B-driven parts share.
 */
export async function startE2bBench() {
  const server = await startServer(['--pool-size', '1', '--executions-per-minute', '0'], { SANDCELL_API_KEYS: KEY });
  process.env.E2B_API_URL = `${server.url}/e2b`;
  process.env.E2B_SANDBOX_URL = `${server.url}/e2b`;
  process.env.E2B_API_KEY = KEY;
  delete process.env.E2B_DEBUG;
  delete process.env.E2B_DOMAIN;
  const { Sandbox } = await import('e2b');
  const failures = { count: 0, first: undefined };
  const fail = (error) => {
    failures.count++;
    failures.first ??= error?.message ?? String(error);
  };
  return { server, Sandbox, failures, fail };
}

export async function runPortsBench({ quick = false } = {}) {
  const { server, Sandbox, failures, fail } = await startE2bBench();
  const port = Number(new URL(server.url).port);
  const samples = quick ? 200 : 2000;
  const through = [];
  let inside = { small: [], bigMs: [], bigBytes: 0 };
  const downloads = [];
  let downloadPeakMB;
  let echo = { answered: 0, ms: 0 };
  let echoPeakMB;
  const baseMB = rssMB(server.pid);
  const connections = 100;
  const messages = quick ? 10 : 50;
  let sandbox;
  try {
    sandbox = await Sandbox.create();
    const host = sandbox.getHost(3000);
    await sandbox.files.write('/home/user/app.py', APP);
    await sandbox.commands.run('python3 /home/user/app.py 3000', { background: true });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let attempt = 0; attempt < 200; attempt++) {
      if (
        await get(agent, port, host, '/headers').then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (let index = 0; index < 200; index++) await get(agent, port, host, '/headers');
    for (let index = 0; index < samples; index++) {
      const started = now();
      try {
        await get(agent, port, host, '/headers');
        through.push(now() - started);
      } catch (error) {
        fail(error);
      }
    }
    const measured = await sandbox.commands.run(
      `python3 -c '${INSIDE.replace('SMALL', String(samples)).replaceAll("'", "'\\''")}'`,
      {
        timeoutMs: 300_000,
      },
    );
    inside = JSON.parse(measured.stdout.trim().split('\n').at(-1));
    const download = await withPeakMemory(server.pid, async () => {
      for (let index = 0; index < 3; index++) {
        const started = now();
        const bytes = await get(agent, port, host, '/big?n=1600');
        downloads.push({ ms: now() - started, bytes });
      }
    });
    downloadPeakMB = download.peakMB;
    agent.destroy();
    const echoed = await withPeakMemory(server.pid, () => echoAtOnce(host, connections, messages));
    echo = echoed.value;
    echoPeakMB = echoed.peakMB;
  } catch (error) {
    fail(error);
  } finally {
    await sandbox?.kill().catch(fail);
    await server.stop();
  }
  const p = percentile;
  const added = p(through, 0.5) - p(inside.small, 0.5);
  const mbPerSecond = (bytes, ms) => bytes / 2 ** 20 / (ms / 1000);
  const best = (values) => Math.max(...values);
  const throughRate = best(downloads.map(({ bytes, ms }) => mbPerSecond(bytes, ms)));
  const insideRate = best(inside.bigMs.map((ms) => mbPerSecond(inside.bigBytes, ms)));
  const share = throughRate / insideRate;
  const stat = (measure, name, value, unit, target, met) => [measure, name, value, unit, target ?? '', met ?? null];
  const rows = [
    stat('ports: small GET through the URL (kept alive)', 'p50', round(p(through, 0.5), 3), 'ms'),
    stat('', 'p95', round(p(through, 0.95), 3), 'ms'),
    stat('ports: the same GET inside the sandbox', 'p50', round(p(inside.small, 0.5), 3), 'ms'),
    stat('ports: added by the server', 'p50', round(added, 3), 'ms', '≤ 1', added <= 1),
    stat('ports: 100 MB download through the URL', 'best of 3', round(throughRate, 1), 'MB/s'),
    stat('ports: the same download inside the sandbox', 'best of 3', round(insideRate, 1), 'MB/s'),
    stat('ports: download through the URL / inside', 'share', round(share * 100, 1), '%', '≥ 50', share >= 0.5),
    stat(
      'ports: server RSS during the download',
      'peak − before',
      round((downloadPeakMB ?? 0) - (baseMB ?? 0), 1),
      'MB',
    ),
    stat(
      `ports: ${connections} WebSockets echoing ${messages} messages each at once`,
      'answered',
      echo.answered,
      `of ${connections * messages}`,
      'all',
      echo.answered === connections * messages,
    ),
    stat('', 'took', round(echo.ms, 1), 'ms'),
    stat('ports: server RSS during the WebSockets', 'peak − before', round((echoPeakMB ?? 0) - (baseMB ?? 0), 1), 'MB'),
    stat('ports: the measures above', 'failed samples', failures.count, '', '0', failures.count === 0),
  ];
  const result = {
    smallGetMs: {
      through: { p50: p(through, 0.5), p95: p(through, 0.95), samples: through.length },
      inside: { p50: p(inside.small, 0.5), samples: inside.small.length },
      addedP50: added,
    },
    downloadMBps: { through: throughRate, inside: insideRate, share, bytes: inside.bigBytes },
    serverRssMB: { before: baseMB, duringDownloadPeak: downloadPeakMB, duringWebSocketsPeak: echoPeakMB },
    webSockets: { connections, messagesEach: messages, answered: echo.answered, ms: echo.ms },
    failedSamples: failures.count,
    ...(failures.first ? { firstFailure: failures.first } : {}),
  };
  return { rows, result };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runPortsBench({ quick: process.argv.includes('--quick') });
  for (const row of rows)
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  console.log(JSON.stringify(result, null, 2));
}
