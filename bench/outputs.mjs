// Published outputs (the object-storage issue's targets), on bubblewrap:
// - what publishing adds to an execution that writes no file: the same server, two sessions (one
//   publishing, one not), `1 + 1` alternating over HTTP; target ≤ 5 ms at p50;
// - a 100 MB output streamed from a sandbox to Azure Blob (Azurite, in memory, its own process)
//   beside the SDK alone uploading 100 MB to the same Azurite with the same block size and
//   concurrency, from memory (bytes it already holds) and from a file on disk (what a user without
//   sandcell would upload); target ≥ 80% of the SDK's throughput.
// Run by bench/run.mjs (with the server rows), or alone: `node bench/outputs.mjs [--quick]`.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { BlobServiceClient } from '@azure/storage-blob';
import pino from 'pino';
import { createBackend, Session } from '../dist/index.js';
import { OutputPublisher } from '../dist/server/core/output-publisher.js';
import { createServer } from '../dist/server/index.js';
import { openObjectStore } from '../dist/store/open-object-store.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const now = () => performance.now();
const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const OUTPUT_BYTES = 100 * 1024 * 1024;
const CHUNK = 4 * 1024 * 1024;
/** As the Azure driver writes (src/store/azure-object-store.ts). */
const BLOCK_BYTES = 8 * 1024 * 1024;
const BLOCKS_IN_FLIGHT = 2;

async function startAzurite() {
  const child = spawn(
    path.join(here, '..', 'node_modules', '.bin', 'azurite-blob'),
    [
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      '0',
      '--inMemoryPersistence',
      '--disableTelemetry',
      '--skipApiVersionCheck',
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const port = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const listening = /listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (listening) resolve(Number(listening[1]));
    });
    child.once('exit', (code) => reject(new Error(`azurite exited (${code})`)));
  });
  const connectionString = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_KEY};BlobEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
  await BlobServiceClient.fromConnectionString(connectionString).getContainerClient('bench').create();
  return { connectionString, stop: () => child.kill() };
}

/** p50 of `1 + 1` over HTTP in a session that publishes and one that does not, on one server. */
async function noFileOverhead(samples) {
  const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-outputs-'));
  const server = await createServer({
    host: '127.0.0.1',
    port: 0,
    poolSize: 2,
    preloadModules: [],
    stateDirectory,
    logDestination: new (await import('node:stream')).Writable({ write: (_chunk, _encoding, done) => done() }),
  });
  try {
    const post = async (route, body) => {
      const response = await fetch(`${server.url}${route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    const publishing = await post('/v1/sessions', { publishOutputs: true });
    const plain = await post('/v1/sessions', {});
    const times = { publishing: [], plain: [] };
    for (let index = 0; index < samples + 5; index++) {
      for (const [name, session] of [
        ['publishing', publishing],
        ['plain', plain],
      ]) {
        const started = now();
        const execution = await post(`/v1/sessions/${session.id}/executions`, { code: '1 + 1' });
        const ms = now() - started;
        if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('1 + 1 came back wrong');
        if (name === 'publishing' && !Array.isArray(execution.files)) throw new Error('the session did not publish');
        if (index >= 5) times[name].push(ms); // the first few warm the kernel and the connection
      }
    }
    return { publishingMs: median(times.publishing), plainMs: median(times.plain) };
  } finally {
    await server.close();
    rmSync(stateDirectory, { recursive: true, force: true });
  }
}

/** 100 MB: the SDK alone from memory, then a sandbox's file published, each to Azurite; MB/s of each. */
async function largeOutput(samples) {
  const azurite = await startAzurite();
  const previous = process.env.AZURE_STORAGE_CONNECTION_STRING;
  process.env.AZURE_STORAGE_CONNECTION_STRING = azurite.connectionString;
  const session = await Session.create({ backend: createBackend('bubblewrap'), preloadModules: [] });
  try {
    const container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient('bench');
    const data = randomBytes(OUTPUT_BYTES);
    const sdk = [];
    for (let index = 0; index < samples; index++) {
      const started = now();
      const chunks = Readable.from(
        (function* () {
          for (let offset = 0; offset < data.length; offset += CHUNK) yield data.subarray(offset, offset + CHUNK);
        })(),
      );
      await container.getBlockBlobClient(`sdk-${index}`).uploadStream(chunks, BLOCK_BYTES, BLOCKS_IN_FLIGHT);
      sdk.push(OUTPUT_BYTES / 1e6 / ((now() - started) / 1000));
    }
    // The SDK alone on a 100 MB file on disk, what a user would upload without sandcell (createReadStream).
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-output-')), 'big.bin');
    writeFileSync(file, data);
    const sdkFile = [];
    for (let index = 0; index < samples; index++) {
      const started = now();
      await container
        .getBlockBlobClient(`sdk-file-${index}`)
        .uploadStream(createReadStream(file, { highWaterMark: CHUNK }), BLOCK_BYTES, BLOCKS_IN_FLIGHT);
      sdkFile.push(OUTPUT_BYTES / 1e6 / ((now() - started) / 1000));
    }
    rmSync(path.dirname(file), { recursive: true, force: true });
    const execution = await session.run(
      'import os\nwith open("big.bin", "wb") as f:\n    for _ in range(25): f.write(os.urandom(4 << 20))',
      { timeoutMs: 120_000 },
    );
    if (execution.status !== 'ok') throw new Error(`writing the output failed: ${execution.error?.value}`);
    const objects = await openObjectStore('azure://devstoreaccount1/bench/published');
    const publisher = new OutputPublisher(async () => ({ objects, secret: randomBytes(32) }), {
      linkTtlMs: 3_600_000,
      logger: pino({ level: 'silent' }),
    });
    const published = [];
    for (let index = 0; index < samples; index++) {
      const started = now();
      const [file] = await publisher.publish(
        'bench',
        `session${index}`,
        [{ path: 'big.bin', size: OUTPUT_BYTES }],
        (entry) => session.files.stream(entry.path, { expectedBytes: entry.size }),
      );
      if (!file?.url) throw new Error(`the output was not published: ${file?.error}`);
      published.push(OUTPUT_BYTES / 1e6 / ((now() - started) / 1000));
    }
    return { sdkMBps: median(sdk), sdkFileMBps: median(sdkFile), publishedMBps: median(published) };
  } finally {
    await session.close();
    if (previous === undefined) delete process.env.AZURE_STORAGE_CONNECTION_STRING;
    else process.env.AZURE_STORAGE_CONNECTION_STRING = previous;
    azurite.stop();
  }
}

export async function runOutputsBench({ quick }) {
  const overhead = await noFileOverhead(quick ? 20 : 100);
  const large = await largeOutput(quick ? 1 : 3);
  const addedMs = overhead.publishingMs - overhead.plainMs;
  const ratio = large.publishedMBps / large.sdkMBps;
  const fileRatio = large.publishedMBps / large.sdkFileMBps;
  return {
    result: { ...overhead, addedMs, ...large, ratio, fileRatio },
    rows: [
      ['publishing: `1 + 1`, no new file, added to the round trip', 'p50', round(addedMs), 'ms', '≤ 5', addedMs <= 5],
      ['publishing: 100 MB output → Azurite', 'median', round(large.publishedMBps, 1), 'MB/s', '', null],
      ['the SDK alone: 100 MB from memory → Azurite', 'median', round(large.sdkMBps, 1), 'MB/s', '', null],
      ['the SDK alone: a 100 MB file on disk → Azurite', 'median', round(large.sdkFileMBps, 1), 'MB/s', '', null],
      ['publishing / the SDK alone from memory', 'ratio', round(ratio), '', '≥ 0.8', ratio >= 0.8],
      ['publishing / the SDK alone from a file', 'ratio', round(fileRatio), '', '≥ 0.8', fileRatio >= 0.8],
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runOutputsBench({ quick: process.argv.includes('--quick') });
  for (const row of rows) console.log(row.join('\t'));
  console.log(JSON.stringify(result));
}
