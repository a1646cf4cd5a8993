// Volumes (docs/volumes.md): part of `npm run bench` (bubblewrap), also alone: `node bench/volumes.mjs [--quick]`
// after `npm run build`. In a temporary state directory, removed after:
//   - 1 GB written (dd, fsync at the end) and read back (dd, the page cache dropped first, as root) from a
//     sandbox in a volume, beside the same dd on this host's disk, in the directory the volumes live in
//     (target: the sandbox ≥ 50% of the host, each way);
//   - what mounting a volume adds to a new session's start: sessions started one after another with a volume
//     mounted and without, alternately, each timed to its first result (target p50 ≤ 5 ms more).
// Each dd and each start is bounded in time; a failure is counted, never retried into a pass.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBackend, Session, VolumeStore } from '../dist/index.js';
import { percentile } from './server.mjs';

const now = () => performance.now();
const round = (value, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
const MiB = 1024 * 1024;
const GB_MIB = 1000;
const isRoot = process.getuid?.() === 0;

function dropCaches() {
  if (!isRoot) return;
  execFileSync('sync');
  try {
    execFileSync('/bin/sh', ['-c', 'echo 3 > /proc/sys/vm/drop_caches']);
  } catch {
    // A container may not allow it: the read is then from the cache, on both sides alike.
  }
}

/** MB/s dd reports for `args` (its last line: "… copied, S s, R MB/s"), timed here too. */
function hostDd(args) {
  const started = now();
  execFileSync('dd', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
  return GB_MIB / ((now() - started) / 1000);
}

async function sandboxDd(session, command) {
  const started = now();
  const result = await session.commands.run(command, { timeoutMs: 300_000 });
  if (result.exitCode !== 0) throw new Error(`dd in the sandbox failed: ${result.stderr.slice(-300)}`);
  return GB_MIB / ((now() - started) / 1000);
}

export async function runVolumesBench({ quick = false } = {}) {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bench-volumes-'));
  const volumes = new VolumeStore({ directory: path.join(directory, 'volumes'), bytesPerOwner: 2 * 1024 * MiB });
  const backend = createBackend('bubblewrap');
  const failures = { count: 0, first: undefined };
  const fail = (error) => {
    failures.count++;
    failures.first ??= String(error?.message ?? error).slice(0, 300);
  };
  const throughput = { sandboxWrite: 0, sandboxRead: 0, hostWrite: 0, hostRead: 0 };
  const starts = { with: [], without: [] };
  let bounded = false;
  try {
    await volumes.create('local', 'bench');
    bounded = (await volumes.usage('local')).bounded;
    // The host's disk, in the directory the volumes' files are on.
    const hostFile = path.join(directory, 'host.bin');
    throughput.hostWrite = hostDd(['if=/dev/zero', `of=${hostFile}`, 'bs=1M', `count=${GB_MIB}`, 'conv=fsync']);
    dropCaches();
    throughput.hostRead = hostDd([`if=${hostFile}`, 'of=/dev/null', 'bs=1M']);
    rmSync(hostFile);

    const session = await Session.create({ backend, volumes, mounts: [{ volume: 'bench', path: '/mnt/bench' }] });
    try {
      throughput.sandboxWrite = await sandboxDd(
        session,
        `dd if=/dev/zero of=/mnt/bench/sandbox.bin bs=1M count=${GB_MIB} conv=fsync 2>&1`,
      );
      dropCaches();
      throughput.sandboxRead = await sandboxDd(session, 'dd if=/mnt/bench/sandbox.bin of=/dev/null bs=1M 2>&1');
      await session.commands.run('rm /mnt/bench/sandbox.bin');
    } finally {
      await session.close();
    }

    // Starts, alternately with and without the mount, after three of each (the template is warm again after
    // the dropped caches).
    const rounds = quick ? 8 : 20;
    for (let index = -3; index < rounds; index++) {
      for (const kind of ['with', 'without']) {
        const started = now();
        try {
          const fresh = await Session.create({
            backend,
            volumes,
            preloadModules: [],
            ...(kind === 'with' ? { mounts: [{ volume: 'bench', path: '/mnt/bench' }] } : {}),
          });
          try {
            const execution = await fresh.run('1 + 1');
            if (execution.error) throw new Error(execution.error.value);
            if (index >= 0) starts[kind].push(now() - started);
          } finally {
            await fresh.close();
          }
        } catch (error) {
          fail(error);
        }
      }
    }
  } catch (error) {
    fail(error);
  } finally {
    await volumes.close().catch(fail);
    rmSync(directory, { recursive: true, force: true });
  }
  const ratio = (sandbox, host) => (host > 0 ? sandbox / host : 0);
  const writeRatio = ratio(throughput.sandboxWrite, throughput.hostWrite);
  const readRatio = ratio(throughput.sandboxRead, throughput.hostRead);
  const withP50 = percentile(starts.with, 0.5);
  const withoutP50 = percentile(starts.without, 0.5);
  const added = withP50 - withoutP50;
  const stat = (measure, name, value, unit, target, met) => [measure, name, value, unit, target ?? '', met ?? null];
  const rows = [
    stat('volumes: 1 GB written in a volume from the sandbox (fsync)', 'rate', round(throughput.sandboxWrite), 'MB/s'),
    stat('', 'host disk', round(throughput.hostWrite), 'MB/s'),
    stat('', 'sandbox / host', round(writeRatio * 100, 0), '%', '≥ 50', writeRatio >= 0.5),
    stat('volumes: 1 GB read from a volume in the sandbox', 'rate', round(throughput.sandboxRead), 'MB/s'),
    stat('', 'host disk', round(throughput.hostRead), 'MB/s'),
    stat('', 'sandbox / host', round(readRatio * 100, 0), '%', '≥ 50', readRatio >= 0.5),
    stat('volumes: a new session to its first result', 'p50 with a volume', round(withP50, 1), 'ms'),
    stat('', 'p50 without', round(withoutP50, 1), 'ms'),
    stat('', 'added by the mount', round(added, 1), 'ms', '≤ 5', added <= 5),
    stat('volumes: the measures above', 'failed samples', failures.count, '', '0', failures.count === 0),
  ];
  const result = {
    quotaEnforcedByFilesystem: bounded,
    throughputMBps: throughput,
    startMs: {
      withVolume: { p50: withP50, samples: starts.with.length },
      without: { p50: withoutP50, samples: starts.without.length },
    },
    failedSamples: failures.count,
    ...(failures.first ? { firstFailure: failures.first } : {}),
  };
  return { rows, result };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runVolumesBench({ quick: process.argv.includes('--quick') });
  for (const row of rows)
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  console.log(JSON.stringify(result, null, 2));
}
