/**
 * `sandcell doctor`: checks everything a sandbox needs on this machine and
 * says exactly what to install or enable. Exit 0 when sessions can run.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { isRoot, which } from '../backends/bubblewrap/host-setup.js';
import { type BubblewrapBackend, createBubblewrapBackend } from '../backends/bubblewrap/index.js';
import { sharedDataBudget } from '../backends/data-budget.js';
import { connectDocker, createDockerBackend, type DockerEngineReport } from '../backends/docker/index.js';
import type { SandboxBackend } from '../backends/spec.js';
import { formatUidRange } from '../backends/uid-leases.js';
import { olderRootfsVersions, olderRuntimeTags } from '../image/prune.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { createSession } from '../session/session.js';
import { checkEnvironments } from './doctor-environments.js';
import { checkGvisor } from './doctor-gvisor.js';
import { checkLanguages } from './doctor-languages.js';
import { checkAllowHost, checkGateChannel, FORWARDER_PROBE, reportForwarder } from './doctor-network.js';
import { EXIT_OK, EXIT_SANDBOX_FAILURE } from './exit-codes.js';
import { dim } from './render.js';

const execFileAsync = promisify(execFile);

/** Python modules the sandbox is expected to have, with the Debian package that provides each. */
export const REQUIRED_PYTHON_MODULES: [module: string, debianPackage: string][] = [
  ['IPython', 'python3-ipython'],
  ['matplotlib_inline', 'python3-matplotlib-inline'],
  ['numpy', 'python3-numpy'],
  ['pandas', 'python3-pandas'],
  ['matplotlib', 'python3-matplotlib'],
  ['seaborn', 'python3-seaborn'],
  ['sklearn', 'python3-sklearn'],
  ['scipy', 'python3-scipy'],
  ['statsmodels', 'python3-statsmodels'],
];

type Level = 'ok' | 'warn' | 'fail';

interface Check {
  level: Level;
  title: string;
  detail?: string;
}

const MARK: Record<Level, string> = { ok: '✓', warn: '!', fail: '✗' };

export async function doctorCommand(options: {
  json?: boolean;
  backend?: string;
  rootfs?: string;
  store?: string;
}): Promise<number> {
  const checks: Check[] = [];
  const add = (level: Level, title: string, detail?: string) => {
    checks.push({ level, title, detail });
    if (!options.json) {
      process.stdout.write(`${MARK[level]} ${title}${detail ? `\n    ${dim(detail.replace(/\n/g, '\n    '))}` : ''}\n`);
    }
  };

  const nodeMajor = Number(process.versions.node.split('.')[0]);
  add(
    nodeMajor >= 20 ? 'ok' : 'fail',
    `Node.js ${process.versions.node}`,
    nodeMajor >= 20 ? undefined : 'sandcell needs Node.js 20 or newer.',
  );

  if (options.backend === undefined || options.backend === 'bubblewrap') await checkBubblewrap(add, options.rootfs);

  if (options.backend === undefined || options.backend === 'docker')
    await checkDocker(add, options.backend === 'docker');
  if (options.backend === undefined || options.backend === 'gvisor')
    await checkGvisor(add, options.backend === 'gvisor', options.rootfs);

  await checkEnvironments(add);
  await checkOlderBuilds(add, options.backend);

  checkAllowHost(add);
  await checkGateChannel(add);
  const store = options.store ?? (process.env.SANDCELL_STORE || undefined);
  if (store !== undefined) await checkStore(add, store);

  const failed = checks.some((check) => check.level === 'fail');
  if (options.json) process.stdout.write(`${JSON.stringify({ ok: !failed, checks }, null, 2)}\n`);
  else
    process.stdout.write(failed ? '\nSome checks failed: fix the items marked ✗ above.\n' : '\nsandcell is ready.\n');
  return failed ? EXIT_SANDBOX_FAILURE : EXIT_OK;
}

type Add = (level: Level, title: string, detail?: string) => void;

/** A clock further than this from the store's makes retention and stale claims misjudge ages. */
const CLOCK_SKEW_WARN_MS = 30_000;

/** The store `serve --store` would use: its credentials and secret, an object written, read, listed, deleted; the clocks. */
async function checkStore(add: Add, location: string): Promise<void> {
  try {
    const { PausedSessions } = await import('../server/core/paused-sessions.js');
    const { OutputPublisher } = await import('../server/core/output-publisher.js');
    const paused = new PausedSessions({ stateDirectory: false, store: location });
    const { clockSkewMs } = await paused.check();
    add('ok', `Store ${location}: written, read back, listed and deleted`);
    try {
      const logger = (await import('pino')).default({ level: 'silent' });
      await new OutputPublisher(() => paused.store(), { linkTtlMs: 60_000, logger }).check();
      add('ok', 'Links to published outputs (--publish-outputs) download what was written');
    } catch (error) {
      add('warn', 'Links to published outputs (--publish-outputs) do not work', (error as Error).message);
    }
    const skew = `${(Math.abs(clockSkewMs) / 1000).toFixed(1)} s ${clockSkewMs > 0 ? 'ahead of' : 'behind'} this machine`;
    if (Math.abs(clockSkewMs) > CLOCK_SKEW_WARN_MS) {
      add(
        'warn',
        `The store's clock is ${skew}`,
        "Retention and stale resume claims go by it: keep this machine's clock in sync (NTP).",
      );
    } else add('ok', `The store's clock agrees with this machine's${clockSkewMs === 0 ? '' : ` (${skew})`}`);
  } catch (error) {
    add('fail', `Store ${location.split('?')[0]}`, (error as Error).message);
  }
}

/** Runtime builds of earlier versions (~2 GB each) that `sandcell image prune` would look at. */
async function checkOlderBuilds(add: Add, backend: string | undefined): Promise<void> {
  const counts: string[] = [];
  if (backend !== 'docker') {
    const rootfs = await olderRootfsVersions();
    if (rootfs.length > 0) counts.push(`${rootfs.length} root filesystem(s)`);
  }
  if (backend === undefined || backend === 'docker') {
    // An unreachable engine was said above.
    const tags = await connectDocker()
      .then(olderRuntimeTags)
      .catch(() => []);
    if (tags.length > 0) counts.push(`${tags.length} Docker image(s)`);
  }
  if (counts.length === 0) return;
  add(
    'warn',
    `runtime builds of earlier sandcell versions are kept: ${counts.join(' and ')}`,
    '`sandcell image prune` removes those no sandbox or container uses (`--dry-run` lists them first).',
  );
}

/** A real session on `backend`: the Python packages are there and the network is not. */
async function trialSession(backend: SandboxBackend, add: Add, label: string): Promise<void> {
  try {
    const session = await createSession({ backend, timeoutMs: 60_000 });
    try {
      const probe = await session.run(
        [
          'import importlib, json',
          `mods = ${JSON.stringify(REQUIRED_PYTHON_MODULES.map(([name]) => name))}`,
          'found = {}',
          'for name in mods:',
          '    try:',
          '        found[name] = getattr(importlib.import_module(name), "__version__", "?")',
          '    except Exception as error:',
          '        found[name] = None',
          'print(json.dumps(found))',
        ].join('\n'),
      );
      const found = JSON.parse(probe.stdout.trim() || '{}') as Record<string, string | null>;
      for (const [module, debianPackage] of REQUIRED_PYTHON_MODULES) {
        const version = found[module];
        if (version) add('ok', `${label}python: ${module} ${version}`);
        else
          add(
            'fail',
            `${label}python: ${module} is missing`,
            label
              ? 'Rebuild the runtime image: `sandcell image build --force`.'
              : `Install it: apt-get install ${debianPackage} (or run \`npm run setup\`).`,
          );
      }
      const network = await session.run(
        'import socket\ntry:\n    socket.create_connection(("1.1.1.1", 53), timeout=1); print("reachable")\nexcept OSError as e:\n    print("blocked")',
      );
      add(network.stdout.includes('blocked') ? 'ok' : 'fail', `${label}sandbox network: ${network.stdout.trim()}`);
      reportForwarder(add, label, (await session.run(FORWARDER_PROBE)).stdout);
      await checkLanguages(session, add, label);
    } finally {
      await session.close();
    }
  } catch (error) {
    add('fail', `${label}a trial session failed`, (error as Error).message);
  }
}

/** Docker Engine, the runtime image and the limits the engine can enforce. Failures are warnings unless Docker was asked for. */
async function checkDocker(add: Add, required: boolean): Promise<void> {
  const problem: Level = required ? 'fail' : 'warn';
  const docker = createDockerBackend();
  let report: DockerEngineReport;
  try {
    report = await docker.report();
  } catch (error) {
    add(problem, 'docker backend: unavailable', (error as Error).message);
    return;
  }
  add('ok', `docker: Engine ${report.serverVersion} (API ${report.apiVersion}) at ${report.endpoint}`);
  add('ok', `docker: runtime image ${report.image} (${formatBytes(report.imageSize)})`);
  add(
    'ok',
    `docker: each session runs as its own host uid, leased on this machine from ${formatUidRange(report.uidLeases.range)} (no account here uses it)`,
  );
  const limits: [keyof DockerEngineReport['limits'], string][] = [
    ['memory', 'memory'],
    ['swap', 'no swap beyond memory'],
    ['pids', 'processes'],
    ['cpu', 'CPU quota'],
  ];
  const missing = limits.filter(([key]) => !report.limits[key]).map(([, text]) => text);
  add(
    missing.length === 0 ? 'ok' : 'warn',
    missing.length === 0
      ? `docker: cgroup${report.cgroupVersion ? ` v${report.cgroupVersion}` : ''} limits are enforced (memory, swap, processes, CPU)`
      : `docker: the engine cannot enforce: ${missing.join(', ')}`,
    missing.length === 0
      ? undefined
      : 'The host kernel lacks these cgroup features; enable them (e.g. swapaccount=1) for full limits.',
  );
  if (report.swept > 0) add('ok', `docker: removed ${report.swept} leftover object(s) of sandcell processes that died`);
  await trialSession(docker, add, 'docker: ');
  // After the trial session: it checks that the engine really uses sandcell's cgroup and mounts.
  add(
    'ok',
    report.memoryBudget.mode === 'cgroup-parent'
      ? "docker: memory budget per session: the session's containers and its /mnt/data share limits.memoryBytes (a cgroup parent sandcell limits)"
      : "docker: memory budget per session: each new kernel's limit is limits.memoryBytes minus what /mnt/data holds",
    report.memoryBudget.reason ? `No session cgroup: ${report.memoryBudget.reason}.` : undefined,
  );
  add(
    report.dataBudget.enforced ? 'ok' : 'warn',
    report.dataBudget.enforced
      ? `docker: data budget: all sessions' /mnt/data together stay within ${formatBytes(sharedDataBudget().budgetBytes)} (resized in place)`
      : "docker: data budget: not enforced; all sessions' /mnt/data together are not bounded",
    report.dataBudget.enforced
      ? 'Set it with `sandcell serve --data-budget-bytes` or SANDCELL_DATA_BUDGET_BYTES (default: half of the memory).'
      : `${capitalize(report.dataBudget.reason ?? 'unknown reason')}. Run sandcell as root beside a local Docker Engine to enforce it; each session is still capped at limits.dataBytes.`,
  );
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

async function checkBubblewrap(add: Add, rootfs: string | undefined): Promise<void> {
  const bwrap = which('bwrap');
  if (bwrap) {
    const version = await execFileAsync(bwrap, ['--version']).then(
      (result) => result.stdout.trim(),
      () => 'unknown version',
    );
    add('ok', `bubblewrap: ${version} (${bwrap})`);
  } else {
    add('fail', 'bubblewrap is not installed', 'Install it: apt-get install bubblewrap (or run `npm run setup`).');
  }

  const backend = createBubblewrapBackend({ rootfs });
  let backendReady = false;
  try {
    const report = await backend.report();
    backendReady = true;
    add('ok', 'user namespaces: bwrap can create a sandbox');
    add('ok', `seccomp filter: ${report.seccompFilter}`);
    if (report.uidLeases) {
      const { range, directory } = report.uidLeases;
      add(
        'ok',
        `each session runs as its own unprivileged host uid, leased from ${formatUidRange(range)} (no account uses it; leases in ${directory})`,
      );
    } else {
      add(
        'warn',
        `sandboxes run as your own account (uid ${process.getuid?.()}), mapped to uid 1000 inside: sessions share its per-user kernel limits (inotify instances, processes)`,
        'Run sandcell as root (sandboxes still run unprivileged) to give each session its own host uid.',
      );
    }
    if (report.cgroups) {
      const controllers = Object.keys(report.cgroups.parents).join(', ');
      add('ok', `cgroups v${report.cgroups.version}: memory, process and CPU limits per sandbox (${controllers})`);
      add(
        'ok',
        'memory budget per session: its kernels and its /mnt/data share limits.memoryBytes, whatever restarts (a session cgroup)',
      );
    } else {
      add(
        'warn',
        'cgroups: not available to sandcell; memory is limited per process (RLIMIT_AS), files in /mnt/data do not count against it, and processes are limited by RLIMIT_NPROC',
        isRoot()
          ? 'Mount the cgroup v1 memory/pids controllers, or a cgroup v2 hierarchy with memory and pids delegated.'
          : 'Run sandcell as root (sandboxes still run unprivileged) to get per-sandbox cgroups.',
      );
    }
    add(
      report.uidLeases ? 'ok' : 'warn',
      report.uidLeases
        ? '/mnt/data: a size-capped tmpfs per session'
        : '/mnt/data: a plain directory; total size is not capped (each file is, by RLIMIT_FSIZE)',
      report.uidLeases ? undefined : 'Run sandcell as root to give each session a size-capped tmpfs.',
    );
    add(
      report.uidLeases ? 'ok' : 'warn',
      report.uidLeases
        ? `data budget: all sessions' /mnt/data together stay within ${formatBytes(sharedDataBudget().budgetBytes)} (each tmpfs resized to its share)`
        : "data budget: not enforced; all sessions' /mnt/data together are not bounded",
      report.uidLeases
        ? 'Set it with `sandcell serve --data-budget-bytes` or SANDCELL_DATA_BUDGET_BYTES (default: half of the memory).'
        : 'Run sandcell as root: only a tmpfs per session can be held to a server-wide budget.',
    );
  } catch (error) {
    add('fail', 'the bubblewrap backend is unavailable', (error as Error).message);
  }

  if (backendReady) {
    await trialSession(backend, add, '');
    await checkStartPath(backend, rootfs, add);
  }
}

/** How sessions start here: forked from a warm template (tried once, as a server's second start would), or by exec. */
async function checkStartPath(backend: BubblewrapBackend, rootfs: string | undefined, add: Add): Promise<void> {
  const path = backend.startPath();
  if (path.mode === 'exec') {
    add(
      'ok',
      `session start: a new bwrap and Python for each sandbox (not forked from a warm template: ${path.reason})`,
    );
    return;
  }
  const forking = createBubblewrapBackend({ rootfs, start: 'fork' });
  const started = performance.now();
  try {
    const session = await createSession({ backend: forking, timeoutMs: 60_000 });
    try {
      const booted = performance.now();
      const second = await createSession({ backend: forking, timeoutMs: 60_000 });
      const forkMs = performance.now() - booted;
      const answer = await second.run('1 + 1');
      await second.close();
      if (answer.results[0]?.data['text/plain'] !== '2') throw new Error('a forked session answered 1 + 1 wrongly');
      add(
        'ok',
        `session start: forked from a warm template of the environment (its first start ${Math.round(booted - started)} ms, a fork ${Math.round(forkMs)} ms); a server forks from its second session on`,
      );
    } finally {
      await session.close();
    }
  } catch (error) {
    add(
      'warn',
      `session start: sessions cannot be forked from a template here, so each starts a new bwrap and Python (${(error as Error).message})`,
      'Sessions still start, each by exec. Set SANDCELL_START=exec to start them that way without trying a template.',
    );
  }
}
