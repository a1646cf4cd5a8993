// Terminals (docs/terminals.md): part of `npm run bench`, also alone: `node bench/terminals.mjs [--quick]`.
// Starts `sandcell serve` on 127.0.0.1 with one key in E2B's format and opens a PTY with the unmodified
// E2B SDK, running `cat` (the terminal's line discipline echoes each byte). Then:
//   - keystroke echo: one byte sent with pty.sendInput, timed until it is seen back on the PTY's stream
//     (target p50 ≤ 5 ms);
//   - 20 MB of output (base64 of 15 MB, one `head | base64` in the shell) read through the stream, timed,
//     with the server's resident memory sampled while it runs (bounded: the terminal is paced, so the
//     server holds a window and the stream's buffer, whatever the program writes; target ≤ 64 MB over
//     the server's own before).
// Every request goes to 127.0.0.1 only; loops are bounded in count. A sample that fails is counted.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rssMB, startE2bBench, withPeakMemory } from './ports.mjs';
import { percentile } from './server.mjs';

const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const now = () => performance.now();
const OUTPUT_BYTES = 15_000_000; // base64: 20,000,000 bytes

export async function runTerminalsBench({ quick = false } = {}) {
  const { server, Sandbox, failures, fail } = await startE2bBench();
  const samples = quick ? 100 : 500;
  const echoes = [];
  let output = { ms: 0, bytes: 0 };
  let outputPeakMB;
  const baseMB = rssMB(server.pid);
  let sandbox;
  try {
    sandbox = await Sandbox.create();
    let seen = '';
    let bytes = 0;
    let waiter;
    const onData = (data) => {
      bytes += data.length;
      seen = (seen + Buffer.from(data).toString('latin1')).slice(-256);
      waiter?.();
    };
    const until = (test, ms = 60_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
        waiter = () => {
          if (test()) {
            clearTimeout(timer);
            waiter = undefined;
            resolve();
          }
        };
        waiter();
      });
    const pty = await sandbox.pty.create({ cols: 200, rows: 50, onData, timeoutMs: 0 });
    const typed = (text) => sandbox.pty.sendInput(pty.pid, new TextEncoder().encode(text));
    await typed('stty -echoctl; exec cat\n');
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let index = 0; index < samples + 20; index++) {
      const key = String.fromCharCode(97 + (index % 26));
      // Each byte is told from the last by a line end now and then: a line stays short.
      if (index % 40 === 39) {
        await typed('\n');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const before = bytes;
      const started = now();
      try {
        await typed(key);
        await until(() => bytes > before && seen.endsWith(key), 5_000);
        if (index >= 20) echoes.push(now() - started);
      } catch (error) {
        fail(error);
      }
    }
    await typed('\x03');
    const shell = await sandbox.pty.create({ cols: 200, rows: 50, onData, timeoutMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const measured = await withPeakMemory(server.pid, async () => {
      const before = bytes;
      const started = now();
      await sandbox.pty.sendInput(
        shell.pid,
        new TextEncoder().encode(`head -c ${OUTPUT_BYTES} /dev/zero | base64 -w 0; echo; echo end-of-$((6*7))\n`),
      );
      await until(() => /end-of-42\r\n/.test(seen), 300_000);
      return { ms: now() - started, bytes: bytes - before };
    });
    output = measured.value;
    outputPeakMB = measured.peakMB;
  } catch (error) {
    fail(error);
  } finally {
    await sandbox?.kill().catch(fail);
    await server.stop();
  }
  const p = percentile;
  const grew = (outputPeakMB ?? 0) - (baseMB ?? 0);
  const stat = (measure, name, value, unit, target, met) => [measure, name, value, unit, target ?? '', met ?? null];
  const echoP50 = p(echoes, 0.5);
  const rows = [
    stat('terminals: keystroke echo through the E2B door', 'p50', round(echoP50, 3), 'ms', '≤ 5', echoP50 <= 5),
    stat('', 'p95', round(p(echoes, 0.95), 3), 'ms'),
    stat('terminals: 20 MB of output through the PTY stream', 'took', round(output.ms, 0), 'ms'),
    stat('', 'rate', round(output.bytes / 2 ** 20 / (output.ms / 1000), 1), 'MB/s'),
    stat('terminals: server RSS during that output', 'peak − before', round(grew, 1), 'MB', '≤ 64', grew <= 64),
    stat('terminals: the measures above', 'failed samples', failures.count, '', '0', failures.count === 0),
  ];
  const result = {
    keystrokeEchoMs: { p50: echoP50, p95: p(echoes, 0.95), samples: echoes.length },
    output: { bytes: output.bytes, ms: output.ms },
    serverRssMB: { before: baseMB, duringOutputPeak: outputPeakMB },
    failedSamples: failures.count,
    ...(failures.first ? { firstFailure: failures.first } : {}),
  };
  return { rows, result };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { rows, result } = await runTerminalsBench({ quick: process.argv.includes('--quick') });
  for (const row of rows)
    console.log(
      row.map((cell) => (cell === null ? '' : cell === true ? 'yes' : cell === false ? 'NO' : cell)).join(' | '),
    );
  console.log(JSON.stringify(result, null, 2));
}
