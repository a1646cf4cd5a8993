// What one sandbox start costs (alone: `node bench/start-cost.mjs [--modules a,b] [--count N]`).
// Starts sessions one after another on the default backend, two ways: with the modules preloaded (a
// warm pool session), and without them (what a caller who finds nothing warm gets), where the user
// then imports them. Each runs 1+1 and closes. CPU-seconds are less noisy than wall times on a shared
// machine: the sandbox's (bwrap, supervisor, kernel: every process of its cgroup, /proc/PID/stat
// utime + stime + the children each reaped; it needs the cgroups, so root) and Node's own
// (process.cpuUsage). Medians; the load average is reported beside.
//
// Where a start's CPU went when measured (bubblewrap on the host's root; Python 3.11, IPython 8.5,
// numpy 1.24, pandas 1.5, matplotlib 3.6): a preloaded start 1.1-1.6 CPU-s with the load, a light one
// 0.4, nearly all of it IPython's import (jedi and prompt_toolkit among it, pulled in by IPython
// itself: deferring them would leave a half-initialised IPython that user code sees); bwrap, the
// supervisor and the host a few hundredths. The preload: pandas 0.26, matplotlib.pyplot 0.34 (0.1 of
// it the font cache each sandbox builds in its own /tmp). Cutting all that could be cut saves under a
// fifth of a preloaded start, so the pool's lever is not preloading when behind (docs/architecture.md, Pool).
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Session } from '../dist/index.js';

const { values } = parseArgs({
  options: {
    modules: { type: 'string', default: 'numpy,pandas,matplotlib,matplotlib.pyplot' },
    count: { type: 'string', default: '5' },
  },
});
const modules = values.modules.split(',').filter(Boolean);
const count = Math.max(1, Math.min(50, Number(values.count) || 5));
const TICKS_PER_SECOND = 100; // USER_HZ on Linux
const round = (value, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** CPU-seconds of a process and the children it reaped (fields 14 to 17 of /proc/PID/stat). */
function processCpuSeconds(processId) {
  try {
    const stat = readFileSync(`/proc/${processId}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields.slice(11, 15).reduce((sum, field) => sum + Number(field), 0) / TICKS_PER_SECOND;
  } catch {
    return 0; // gone meanwhile
  }
}
async function sandboxCpuSeconds(session) {
  const { processIds = [] } = await session.usage();
  return processIds.reduce((sum, processId) => sum + processCpuSeconds(processId), 0);
}
const nodeCpuSeconds = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

/** One start: ready → 1+1, then (light) the user's first import of the modules. */
async function sample(preload) {
  const nodeBefore = nodeCpuSeconds();
  const began = performance.now();
  const session = await Session.create({ preloadModules: preload ? modules : [] });
  try {
    const execution = await session.run('1+1');
    if (execution.results[0]?.data['text/plain'] !== '2') throw new Error('start-cost: wrong result');
    const firstResultMs = performance.now() - began;
    const startCpu = await sandboxCpuSeconds(session);
    const nodeCpu = nodeCpuSeconds() - nodeBefore;
    if (preload) return { firstResultMs, startCpu, nodeCpu };
    const importBegan = performance.now();
    const imported = await session.run(`import ${modules.join(', ')}`);
    if (imported.error) throw new Error(`start-cost: ${imported.error.name}: ${imported.error.value}`);
    return {
      firstResultMs,
      startCpu,
      nodeCpu,
      importMs: performance.now() - importBegan,
      importCpu: (await sandboxCpuSeconds(session)) - startCpu,
    };
  } finally {
    await session.close();
  }
}

async function measure(preload) {
  const loadBefore = os.loadavg()[0];
  const samples = [];
  for (let index = 0; index < count; index++) samples.push(await sample(preload));
  const median = (key) => samples.map((one) => one[key]).sort((a, b) => a - b)[Math.floor(samples.length / 2)];
  return {
    medianFirstResultMs: Math.round(median('firstResultMs')),
    medianSandboxCpuSeconds: round(median('startCpu')),
    medianNodeCpuSeconds: round(median('nodeCpu')),
    ...(preload
      ? {}
      : {
          medianFirstImportMs: Math.round(median('importMs')),
          medianFirstImportCpuSeconds: round(median('importCpu')),
        }),
    load: [round(loadBefore, 1), round(os.loadavg()[0], 1)],
  };
}

console.log(
  JSON.stringify({ modules, count, preloaded: await measure(true), withoutPreload: await measure(false) }, null, 2),
);
