// What one sandbox start costs in CPU (alone: `node bench/start-cost.mjs [--preload a,b|none] [--count N]`).
// Starts sessions one after another on the default backend, each with the preload a warm pool
// session gets, runs 1+1 and closes it. CPU-seconds are less noisy than wall times on a shared
// machine: Node's own (process.cpuUsage) and the sandbox's (bwrap, supervisor, kernel: every process
// of its cgroup just before it closes, /proc/PID/stat utime + stime + the children each reaped; it
// needs the cgroups, so root). The load average is reported beside.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Session } from '../dist/index.js';

const { values } = parseArgs({
  options: {
    preload: { type: 'string', default: 'numpy,pandas,matplotlib,matplotlib.pyplot' },
    count: { type: 'string', default: '8' },
  },
});
const preloadModules = values.preload === 'none' ? [] : values.preload.split(',').filter(Boolean);
const count = Math.max(1, Math.min(100, Number(values.count) || 8));
const ticksPerSecond = 100; // USER_HZ on Linux
const round = (value, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** CPU-seconds of a process and the children it reaped (fields 14 to 17 of /proc/PID/stat). */
function processCpuSeconds(processId) {
  try {
    const stat = readFileSync(`/proc/${processId}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields.slice(11, 15).reduce((sum, field) => sum + Number(field), 0) / ticksPerSecond;
  } catch {
    return 0; // gone meanwhile
  }
}
const ownCpuSeconds = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

const samples = [];
const loadBefore = os.loadavg()[0];
for (let index = 0; index < count; index++) {
  const own = ownCpuSeconds();
  const started = performance.now();
  const session = await Session.create({ preloadModules });
  const ready = performance.now();
  const execution = await session.run('1+1');
  if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('start-cost: wrong result');
  const { processIds = [] } = await session.usage();
  const sandboxCpu = processIds.reduce((sum, processId) => sum + processCpuSeconds(processId), 0);
  await session.close();
  samples.push({
    startMs: ready - started,
    sandboxCpu,
    nodeCpu: ownCpuSeconds() - own,
  });
}
const median = (key) => [...samples].map((sample) => sample[key]).sort((a, b) => a - b)[Math.floor(samples.length / 2)];
console.log(
  JSON.stringify({
    preload: preloadModules.join(',') || 'none',
    count,
    medianStartMs: Math.round(median('startMs')),
    medianSandboxCpuSeconds: round(median('sandboxCpu')),
    medianNodeCpuSeconds: round(median('nodeCpu')),
    load: [round(loadBefore, 1), round(os.loadavg()[0], 1)],
  }),
);
