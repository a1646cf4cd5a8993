// What one backend's sessions measure, for the table of bench/run.mjs: a cold start and a start from a warm
// pool to the first result, the warm round trip, idle memory (IPython alone, and with the pooled imports), a
// parallel load, each language's new context and warm round trip with `commands.run`, and for comparison the
// cookbook's `docker exec` per call. A sample that fails is counted (newFailures), not fatal.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Session, SessionPool } from '../dist/index.js';
import { percentile } from './server.mjs';

const now = () => performance.now();

export const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function memoryOf(processIds) {
  let rssKiB = 0;
  let pssKiB = 0;
  for (const pid of processIds) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      rssKiB += Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
      pssKiB += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    } catch {
      // ended meanwhile
    }
  }
  return { rssMB: round(rssKiB / 1024, 1), pssMB: round(pssKiB / 1024, 1) };
}

/**
 * Failures are counted, not fatal: a sample whose session could not be created or whose run threw is
 * reported (the `failed samples` row and `failedSamples` in the JSON), and the bench goes on.
 */
export function newFailures() {
  const failures = { count: 0, first: undefined };
  failures.add = (error) => {
    failures.count++;
    failures.first ??= error?.message ?? String(error);
  };
  return failures;
}

export async function coldStart(backend, samples, failures) {
  const times = [];
  for (let index = 0; index < samples; index++) {
    try {
      const started = now();
      const session = await Session.create({ backend });
      try {
        const execution = await session.run('1+1');
        if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('cold start: wrong result');
        times.push(now() - started);
      } finally {
        await session.close();
      }
    } catch (error) {
      failures.add(error);
    }
  }
  return times;
}

export async function poolFirstResult(backend, samples, failures) {
  const pool = new SessionPool({ size: 2, maxSessions: 8, sessionOptions: { backend } });
  await pool.start().catch((error) => failures.add(error));
  const times = [];
  for (let index = 0; index < samples; index++) {
    // Wait until the pool is warm again, as it is between users in practice (bounded: a failing pool backs off).
    for (let waited = 0; waited < 1500 && pool.stats().warm < 2; waited++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    try {
      const started = now();
      const session = await pool.acquire();
      try {
        const execution = await session.run('1+1');
        if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('pool: wrong result');
        times.push(now() - started);
      } finally {
        await session.close();
      }
    } catch (error) {
      failures.add(error);
    }
  }
  await pool.close();
  return times;
}

export async function warmRoundTrip(backend, runs, failures) {
  let session;
  try {
    session = await Session.create({ backend });
  } catch (error) {
    failures.add(error);
    return [];
  }
  const times = [];
  try {
    for (let index = 0; index < 100; index++) await session.run('1+1');
    for (let index = 0; index < runs; index++) {
      const started = now();
      await session.run('1+1');
      times.push(now() - started);
    }
  } catch (error) {
    failures.add(error);
  } finally {
    await session.close();
  }
  return times;
}

/** Sessions created at once; the ones that failed are counted and left out. */
async function createSessions(count, options, failures) {
  const settled = await Promise.allSettled(Array.from({ length: count }, () => Session.create(options)));
  for (const result of settled) if (result.status === 'rejected') failures.add(result.reason);
  return settled.filter((result) => result.status === 'fulfilled').map((result) => result.value);
}

export async function idleMemory(backend, count, preloadModules, failures) {
  const sessions = await createSessions(count, { backend, preloadModules }, failures);
  await Promise.all(sessions.map((session) => session.run('1+1')));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const perSession = [];
  for (const session of sessions) {
    const usage = await session.usage();
    perSession.push({
      ...memoryOf(usage.processIds ?? []),
      cgroupMB: usage.memoryBytes ? round(usage.memoryBytes / 2 ** 20, 1) : null,
    });
  }
  await Promise.all(sessions.map((session) => session.close()));
  const mean = (key) =>
    perSession.length === 0
      ? null
      : round(perSession.reduce((sum, entry) => sum + (entry[key] ?? 0), 0) / perSession.length, 1);
  return { sessions: sessions.length, rssMB: mean('rssMB'), pssMB: mean('pssMB'), cgroupMB: mean('cgroupMB') };
}

export async function parallel(backend, sessionCount, runsEach, failures) {
  const sessions = await createSessions(sessionCount, { backend }, failures);
  await Promise.all(sessions.map((session) => session.run('1+1')));
  const latencies = [];
  let wrong = 0;
  const started = now();
  await Promise.all(
    sessions.map(async (session, index) => {
      for (let run = 0; run < runsEach; run++) {
        const begun = now();
        try {
          const execution = await session.run(`${index} * 1000 + ${run}`);
          latencies.push(now() - begun);
          if (execution.results[0]?.data['text/plain'] !== String(index * 1000 + run)) wrong++;
        } catch (error) {
          failures.add(error);
        }
      }
    }),
  );
  const seconds = (now() - started) / 1000;
  await Promise.all(sessions.map((session) => session.close()));
  return {
    sessions: sessions.length,
    throughput: latencies.length / seconds,
    p95: latencies.length ? percentile(latencies, 0.95) : undefined,
    wrong,
  };
}

/** The cookbook's approach for comparison: a stateless `docker exec … python3 -c` per call, in a running container. */
export async function dockerExecPerCall(docker, image, samples) {
  const run = promisify(execFile);
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: ['/bin/sleep', 'infinity'],
    HostConfig: { NetworkMode: 'none', ReadonlyRootfs: true, Init: true },
  });
  await container.start();
  const times = [];
  try {
    for (let index = 0; index < samples; index++) {
      const started = now();
      const { stdout } = await run('docker', ['exec', container.id, 'python3', '-c', 'print(1+1)']);
      times.push(now() - started);
      if (stdout.trim() !== '2') throw new Error('docker exec: wrong result');
    }
  } finally {
    await container.remove({ force: true });
  }
  return times;
}

/** What each language runs for `1+1`, and how its answer is checked (bash has no results, only stdout). */
export const LANGUAGE_PROBES = {
  python: { code: '1+1', ok: (execution) => execution.results[0]?.data['text/plain'] === '2' },
  javascript: { code: '1+1', ok: (execution) => execution.results[0]?.data['text/plain'] === '2' },
  typescript: { code: '1+1', ok: (execution) => execution.results[0]?.data['text/plain'] === '2' },
  r: { code: '1+1', ok: (execution) => execution.results[0]?.data['text/plain']?.trim() === '[1] 2' },
  bash: { code: 'echo $((1+1))', ok: (execution) => execution.stdout === '2\n' },
};

/**
 * Per language, in one session: a new context's first answer (createContext → result), then the warm
 * round trip in the last one; and `commands.run('true')`.
 */
export async function languagesAndCommands(backend, coldSamples, warmRuns, failures) {
  const measured = { languages: {}, command: [] };
  let session;
  try {
    session = await Session.create({ backend });
  } catch (error) {
    failures.add(error);
    return measured;
  }
  try {
    for (const [language, probe] of Object.entries(LANGUAGE_PROBES)) {
      const cold = [];
      const warm = [];
      measured.languages[language] = { cold, warm };
      try {
        let context;
        for (let index = 0; index < coldSamples; index++) {
          if (context) await session.removeContext(context.id);
          const started = now();
          context = await session.createContext({ language });
          const execution = await session.run(probe.code, { context: context.id });
          if (!probe.ok(execution)) throw new Error(`${language}: wrong answer to 1+1`);
          cold.push(now() - started);
        }
        for (let index = 0; index < 50; index++) await session.run(probe.code, { context: context.id });
        for (let index = 0; index < warmRuns; index++) {
          const started = now();
          const execution = await session.run(probe.code, { context: context.id });
          warm.push(now() - started);
          if (!probe.ok(execution)) throw new Error(`${language}: wrong answer to 1+1`);
        }
        await session.removeContext(context.id);
      } catch (error) {
        failures.add(error);
      }
    }
    for (let index = 0; index < 20 + warmRuns; index++) {
      const started = now();
      const result = await session.commands.run('true');
      if (result.exitCode !== 0) throw new Error('commands.run: true did not exit 0');
      if (index >= 20) measured.command.push(now() - started);
    }
  } catch (error) {
    failures.add(error);
  } finally {
    await session.close();
  }
  return measured;
}
