import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { expect, it } from 'vitest';
import { MANAGED_LABEL, SESSION_LABEL, UID_LABEL } from '../src/backends/docker/container-config.js';
import { createDockerBackend, DockerVolume } from '../src/backends/docker/index.js';
import { SessionPool } from '../src/session/pool.js';
import { Session } from '../src/session/session.js';
import { runBackendContract } from './contract/backend-contract.js';
import { hostIsolationCases } from './contract/host-isolation-cases.js';
import { expectOneMemoryBudget, runSecurityContract } from './contract/security-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { hostHasAccount, hostUidOf, leasesOf } from './support/host-uids.js';
import { runProcess, startProcessGroup, startSessionOwner } from './support/process.js';

const backend = createDockerBackend();
const reason = await unavailableReason(backend);

async function objectsOfSession(sessionId: string) {
  const filters = { label: [`${SESSION_LABEL}=${sessionId}`] };
  const containers = await backend.docker.listContainers({ all: true, filters });
  const { Volumes: volumes } = await backend.docker.listVolumes({ filters });
  return { containers, volumes: volumes ?? [] };
}

describeWhenAvailable('docker backend', 'docker', reason, () => {
  runBackendContract({ name: 'docker', createBackend: () => backend });
  runSecurityContract({ name: 'docker', createBackend: () => backend });

  it('runs each kernel in a locked-down container and removes everything of a session on close', async () => {
    const session = await Session.create({ backend });
    const { containers, volumes } = await objectsOfSession(session.id);
    expect(volumes).toHaveLength(1);
    const kernel = containers.find((container) => container.Labels['org.sandcell.role'] === 'kernel');
    expect(kernel).toBeDefined();
    const inspected = await backend.docker.getContainer(kernel?.Id as string).inspect();
    const host = inspected.HostConfig;
    expect(host.NetworkMode).toBe('none');
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.SecurityOpt).toContain('no-new-privileges:true');
    expect(host.SecurityOpt?.some((option: string) => option.startsWith('seccomp=unconfined'))).toBe(false);
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.Memory).toBeGreaterThan(0);
    expect(host.MemorySwap).toBe(host.Memory);
    expect(host.PidsLimit).toBeGreaterThan(0);
    expect(host.NanoCpus).toBeGreaterThan(0);
    const uid = Number(kernel?.Labels[UID_LABEL]);
    expect(inspected.Config.User).toBe(`${uid}:${uid}`);
    expect(inspected.Config.Tty).toBe(false);
    expect(inspected.Config.Labels[MANAGED_LABEL]).toBe('1');
    // Two seccomp filters: the engine's default profile, and sandcell's stacked on it.
    const seccomp = (await session.run('print(open("/proc/self/status").read())')).stdout;
    expect(seccomp).toMatch(/^Seccomp:\t2$/m);
    expect(seccomp).toMatch(/^Seccomp_filters:\t2$/m);
    // /tmp and /mnt/data are size-capped tmpfs; so is /dev/shm.
    const mounts = (await session.run('print(open("/proc/mounts").read())')).stdout;
    expect(mounts).toMatch(/tmpfs \/tmp tmpfs [^\n]*size=524288k/);
    expect(mounts).toMatch(/tmpfs \/mnt\/data tmpfs [^\n]*size=1048576k/);
    expect(mounts).toMatch(/shm \/dev\/shm tmpfs [^\n]*size=65536k/);
    await session.close();
    const after = await objectsOfSession(session.id);
    expect(after.containers).toEqual([]);
    expect(after.volumes).toEqual([]);
  });

  it("runs each session's containers as its own leased host uid, not 1000 and no account's, released at close", async () => {
    const { uidLeases } = await backend.report();
    const [first, second] = await Promise.all([Session.create({ backend }), Session.create({ backend })]);
    let uids: number[] = [];
    try {
      uids = [await hostUidOf(first), await hostUidOf(second)];
      expect(uids[0]).not.toBe(uids[1]);
      for (const uid of uids) {
        expect(uid).not.toBe(1000);
        expect(uid).toBeGreaterThanOrEqual(uidLeases.range.first);
        expect(uid).toBeLessThanOrEqual(uidLeases.range.last);
        expect(hostHasAccount(uid)).toBe(false);
        expect(leasesOf(uidLeases.directory, uid)).toHaveLength(1);
      }
      // The holder runs as the session's uid too, and a restarted kernel keeps it.
      const { containers } = await objectsOfSession(first.id);
      expect(new Set(containers.map((container) => container.Labels[UID_LABEL]))).toEqual(new Set([String(uids[0])]));
      await first.restart();
      expect(await hostUidOf(first)).toBe(uids[0]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
    for (const uid of uids) expect(leasesOf(uidLeases.directory, uid)).toEqual([]);
  });

  hostIsolationCases(backend);

  it('keeps /mnt/data across a kernel killed for ignoring a timeout', async () => {
    const session = await Session.create({ backend, interruptGraceMs: 300 });
    try {
      await session.files.write('kept.txt', 'still here');
      const stuck = await session.run(
        'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(1)',
        { timeoutMs: 500 },
      );
      expect(stuck.status).toBe('timeout');
      expect(stuck.stateLost).toBe(true);
      const after = await session.run('print(open("/mnt/data/kept.txt").read())');
      expect(after.stdout).toBe('still here\n');
    } finally {
      await session.close();
    }
  });

  it('reports out-of-memory when the container hits its memory limit', async () => {
    const session = await Session.create({ backend, limits: { memoryBytes: 128 * 1024 * 1024 } });
    try {
      const execution = await session.run('hog = b"x" * (512 * 1024 * 1024)');
      expect(execution.error?.name).toBe('KernelDied');
      expect(execution.error?.value).toContain('more memory than its limit');
      expect(execution.stateLost).toBe(true);
    } finally {
      await session.close();
    }
  });

  it('puts every container of a session in a cgroup that holds its memory budget, removed on close', async () => {
    const report = await backend.report();
    expect(report.memoryBudget).toEqual({ mode: 'cgroup-parent' });
    const session = await Session.create({ backend, limits: { memoryBytes: 300 * 1024 * 1024 } });
    const { containers } = await objectsOfSession(session.id);
    const parents = await Promise.all(
      containers.map(async (container) => (await backend.docker.getContainer(container.Id).inspect()).HostConfig),
    );
    const parent = parents[0]?.CgroupParent as string;
    expect(parent).toMatch(/^\/sandcell\/\d+-/);
    expect(parents.map((host) => host.CgroupParent)).toEqual([parent, parent]);
    const directory = path.join('/sys/fs/cgroup/memory', parent);
    expect(readFileSync(path.join(directory, 'memory.limit_in_bytes'), 'utf8').trim()).toBe(String(300 * 1024 * 1024));
    await session.close();
    expect(existsSync(directory)).toBe(false);
  });

  it('without session cgroups, lowers the limit of each new kernel by what /mnt/data holds', async () => {
    const fallback = createDockerBackend({ sessionCgroups: 'off' });
    expect((await fallback.report()).memoryBudget.mode).toBe('kernel-memory');
    await expectOneMemoryBudget(fallback);
  });

  it('creates 20 sessions in parallel, each working (transient engine errors are retried)', async () => {
    const created = await Promise.allSettled(
      Array.from({ length: 20 }, () => Session.create({ backend, preloadModules: [] })),
    );
    const sessions = created.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    try {
      expect(created.filter((result) => result.status === 'rejected')).toEqual([]);
      const executions = await Promise.all(sessions.map((session, index) => session.run(`${index} * 7`)));
      expect(executions.map((execution) => execution.results[0]?.data['text/plain'])).toEqual(
        sessions.map((_, index) => String(index * 7)),
      );
    } finally {
      await Promise.all(sessions.map((session) => session.close()));
    }
  }, 240_000);

  it('measures /mnt/data through the holder when the engine mounts it out of sight (a remote engine)', async () => {
    const session = await Session.create({ backend, preloadModules: [] });
    try {
      await session.run('open("/mnt/data/five.bin", "wb").write(b"x" * (5 << 20))');
      const local = (session as unknown as { volume: DockerVolume }).volume;
      const internals = local as unknown as { holder: Dockerode.Container; labels: Record<string, string> };
      // The same volume as a remote engine's would be: no host mount to measure.
      const remote = new DockerVolume(
        backend.docker,
        local.sessionId,
        local.name,
        internals.holder,
        internals.labels,
        local.owner,
      );
      expect(await local.usedBytes()).toBe(5 << 20);
      expect(await remote.usedBytes()).toBe(5 << 20);
    } finally {
      await session.close();
    }
  });

  it('works under the pool: warm containers, handed out and replaced', async () => {
    const pool = new SessionPool({ size: 1, sessionOptions: { backend } });
    try {
      await pool.start();
      const session = await pool.acquire();
      const execution = await session.run('import pandas; print(pandas.__version__)');
      expect(execution.status).toBe('ok');
      await session.close();
    } finally {
      await pool.close();
    }
  });

  it('after sandcell is killed, its kernel exits and the next start removes what it left, uid lease included', async () => {
    const { uidLeases } = await backend.report();
    const { child, id } = await startSessionOwner({ backend: 'docker' });
    const before = await objectsOfSession(id);
    expect(before.containers.length).toBe(2);
    expect(before.volumes.length).toBe(1);
    const uid = Number(before.volumes[0]?.Labels?.[UID_LABEL]);
    expect(leasesOf(uidLeases.directory, uid)).toHaveLength(1);
    const parent = (await backend.docker.getContainer(before.containers[0]?.Id as string).inspect()).HostConfig
      .CgroupParent as string;
    expect(parent).toMatch(/^\/sandcell\/\d+-/);
    const budgetDirectory = path.join('/sys/fs/cgroup/memory', parent);
    expect(existsSync(budgetDirectory)).toBe(true);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    // Its stdin closed with it: the kernel container stops by itself.
    await expect
      .poll(
        async () =>
          (await objectsOfSession(id)).containers.filter(
            (container) => container.Labels['org.sandcell.role'] === 'kernel' && container.State === 'running',
          ).length,
        { timeout: 10_000 },
      )
      .toBe(0);
    // A new backend (a new sandcell process would do the same) sweeps the rest, and the uid lease.
    expect(leasesOf(uidLeases.directory, uid)).toHaveLength(1);
    await createDockerBackend().ensureAvailable();
    const after = await objectsOfSession(id);
    expect(after.containers).toEqual([]);
    expect(after.volumes).toEqual([]);
    expect(leasesOf(uidLeases.directory, uid)).toEqual([]);
    expect(existsSync(budgetDirectory)).toBe(false);
  });
});

describeWhenAvailable('sandcell CLI with Docker', 'docker', reason, () => {
  const bin = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');
  const sandcell = (args: string[], input = '') => runProcess(process.execPath, [bin, ...args], { input });

  it('runs code with --backend docker', async () => {
    const result = await sandcell(
      ['run', '-', '--backend', 'docker', '--json'],
      'import socket\nprint(socket.gethostname())\n6*7',
    );
    expect(result.code).toBe(0);
    const execution = JSON.parse(result.stdout) as { stdout: string; results: { data: Record<string, string> }[] };
    expect(execution.stdout).toBe('sandbox\n');
    expect(execution.results[0]?.data['text/plain']).toBe('42');
  });

  it('Ctrl-C (SIGINT to the process group) interrupts the code: KeyboardInterrupt, exit 130', async () => {
    const run = startProcessGroup(process.execPath, [bin, 'run', '-', '--backend', 'docker']);
    run.child.stdin.end('import time\nprint("sleep" + "ing", flush=True)\ntime.sleep(60)\n');
    await run.printed('sleeping');
    run.pressCtrlC();
    const { code } = await run.exited;
    expect(run.output.stderr).toContain('KeyboardInterrupt');
    expect(code).toBe(130);
  });

  it('image status and image build find the runtime image built and reuse it', async () => {
    const status = await sandcell(['image', 'status', '--json']);
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as { docker: { tag: string; present: boolean } };
    expect(parsed.docker).toEqual({ tag: backend.image, present: true });
    const build = await sandcell(['image', 'build', '--json']);
    expect(build.code).toBe(0);
    expect(JSON.parse(build.stdout)).toMatchObject({ backend: 'docker', tag: backend.image, reused: true });
  });

  it('doctor --backend docker checks the engine, the image, the limits and a trial session', async () => {
    const result = await sandcell(['doctor', '--backend', 'docker', '--json']);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { ok: boolean; checks: { level: string; title: string }[] };
    expect(report.ok).toBe(true);
    const titles = report.checks.map((check) => check.title).join('\n');
    expect(titles).toContain('docker: Engine');
    expect(titles).toContain(`docker: runtime image ${backend.image}`);
    expect(titles).toContain('docker: sandbox network: blocked');
    expect(titles).toContain("docker: memory budget per session: the session's containers and its /mnt/data share");
    expect(titles).toMatch(/docker: data budget: all sessions' \/mnt\/data together stay within/);
    expect(titles).not.toContain('bubblewrap');
  });
});
