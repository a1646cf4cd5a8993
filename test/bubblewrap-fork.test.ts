/**
 * Sessions forked from a warm template (issue 31): the bubblewrap contracts
 * run on forked sessions, then what forking adds to answer for — each fork is
 * its own host uid and cannot reach another fork or the template, a session's
 * excesses spare the template and the others, and a template killed with
 * SIGKILL loses no session.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { Session } from '../src/session/session.js';
import { runBackendContract } from './contract/backend-contract.js';
import { canary } from './contract/canary.js';
import { isAlive } from './contract/contract-support.js';
import { hostIsolationCases } from './contract/host-isolation-cases.js';
import { runNetworkContract } from './contract/network-contract.js';
import { runSecurityContract } from './contract/security-contract.js';
import { runSupervisorContract } from './contract/supervisor-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const forking = () => createBubblewrapBackend({ start: 'fork' });

runBackendContract({ name: 'bubblewrap (forked)', createBackend: forking });
runSecurityContract({ name: 'bubblewrap (forked)', createBackend: forking });
runNetworkContract({ name: 'bubblewrap (forked)', createBackend: forking });
runSupervisorContract({ name: 'bubblewrap (forked)', createBackend: forking });

/** The parent's pid, from /proc/PID/stat. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** This process's session templates: the Python under each bwrap it started to run sandcell_zygote.py. */
function templates(): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || !commandLine(pid).includes('sandcell_zygote.py')) continue;
    try {
      const bwrap = parentOf(pid);
      if (parentOf(bwrap) === process.pid && commandLine(bwrap).startsWith('/usr/bin/bwrap')) found.push(pid);
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/** The session's PID 1 on the host: the one of its processes whose parent is not one of them. */
async function firstProcess(session: Session): Promise<number> {
  const pids = (await session.usage()).processIds ?? [];
  const first = pids.find((pid) => !pids.includes(parentOf(pid)));
  if (first === undefined) throw new Error(`no first process among ${pids.join(', ')}`);
  return first;
}

const ISOLATION_PROBE = `import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def reach(pid):
    seen = []
    try:
        os.kill(pid, 0)
        seen.append("signal")
    except OSError as error:
        seen.append(errno.errorcode[error.errno])
    try:
        open("/proc/%d/mem" % pid, "rb").close()
        seen.append("mem")
    except OSError as error:
        seen.append(errno.errorcode[error.errno])
    buffer = ctypes.create_string_buffer(8)
    local = (ctypes.c_void_p * 2)(ctypes.addressof(buffer), 8)
    remote = (ctypes.c_void_p * 2)(4096, 8)
    if libc.syscall(310, pid, local, 1, remote, 1, 0) >= 0:
        seen.append("read")
    else:
        seen.append(errno.errorcode[ctypes.get_errno()])
    return "/".join(seen)
print("self", reach(os.getpid()))
for pid in map(int, sys.argv[1:] if len(sys.argv) > 1 else TARGETS):
    print(pid, reach(pid))
print("uid_map", open("/proc/self/uid_map").read().split())
print("pids", sorted(int(name) for name in os.listdir("/proc") if name.isdigit()))
`;

describe('sessions forked from a template', () => {
  const backend = forking();
  let first: Session;
  let second: Session;

  beforeAll(async () => {
    first = await Session.create({ backend });
    second = await Session.create({ backend });
  });

  afterAll(async () => {
    await first?.close();
    await second?.close();
  });

  hostIsolationCases(backend);

  it("each session's PID 1 is a fork of the template, past the imports every session makes", async () => {
    const template = await templateOf(first);
    expect(templates()).toContain(template);
    expect(await templateOf(second)).toBe(template);
    // Warm, not imported by the code: the template had pandas loaded before the session existed.
    const warm = await first.run('import sys\n"pandas" in sys.modules');
    expect(warm.results[0]?.data['text/plain']).toBe('True');
  });

  it("leaves none of sandcell's modules to the code, though the template and the supervisor loaded them", async () => {
    // The canary: a module the template loaded is there to find.
    const probe = await first.run(
      'import sys\nprint("json" in sys.modules)\nprint(sorted(m for m in sys.modules if m.startswith("sandcell") or m == "seccomp_loader"))\nimport sandcell_routes',
    );
    expect(probe.stdout).toBe('True\n[]\n');
    expect(probe.error?.name).toBe('ModuleNotFoundError');
  });

  it('two forks are two host uids, and neither can signal, open or read the memory of the other or of the template', async () => {
    const template = await templateOf(first);
    const others = [...((await second.usage()).processIds ?? []), template];
    const probe = await first.run(ISOLATION_PROBE.replace('TARGETS', JSON.stringify(others)));
    expect(probe.error).toBeUndefined();
    const lines = probe.stdout.trim().split('\n');
    // The canary: the probe reaches its own process every way it tries (process_vm_readv is refused to all).
    expect(lines[0]).toBe('self signal/mem/EPERM');
    for (const [index, pid] of others.entries()) expect(lines[index + 1]).toBe(`${pid} ESRCH/ENOENT/EPERM`);
    const ownMap = /uid_map \['1000', '(\d+)', '1'\]/.exec(probe.stdout)?.[1];
    const otherMap = /uid_map \['1000', '(\d+)', '1'\]/.exec(
      (await second.run(ISOLATION_PROBE.replace('TARGETS', '[]'))).stdout,
    )?.[1];
    expect(ownMap).toBeDefined();
    expect(otherMap).toBeDefined();
    expect(ownMap).not.toBe(otherMap);
    expect(ownMap).not.toBe('0');
    // On the host, every process of each session runs as that uid.
    for (const [session, uid] of [
      [first, ownMap],
      [second, otherMap],
    ] as const) {
      for (const pid of (await session.usage()).processIds ?? []) {
        expect(/^Uid:\t(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]).toBe(uid);
      }
    }
    // Its own PID namespace: only its own processes, counted from 1.
    expect(/pids \[1, 2(, \d+)*\]/.test(probe.stdout)).toBe(true);
  });

  it("one session's files are not another's", async () => {
    await first.run('open("/mnt/data/mine.txt", "w").write("first")\nopen("/tmp/mine.txt", "w").write("first")');
    const seen = await second.run(
      'import os\nprint(os.path.exists("/mnt/data/mine.txt"), os.path.exists("/tmp/mine.txt"), os.listdir("/mnt/data"))',
    );
    expect(seen.stdout.trim()).toBe('False False []');
  });

  it('a session that exhausts its memory, forks a bomb and kills all it can see leaves the template and the others working', async () => {
    const template = await templateOf(first);
    const hostile = await Session.create({ backend, limits: { memoryBytes: 256 * 1024 * 1024, processes: 64 } });
    try {
      await canary(hostile);
      const bomb = await hostile.run(
        'import os\nchildren = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time; time.sleep(30); os._exit(0)\n        children += 1\nexcept OSError as error:\n    print("stopped after", children)',
        { timeoutMs: 15_000 },
      );
      expect(bomb.stdout).toMatch(/stopped after \d+/);
      const hog = await hostile.run('hog = []\nwhile True:\n    hog.append(b"x" * (32 * 1024 * 1024))', {
        timeoutMs: 30_000,
      });
      expect(['MemoryError', 'KernelDied']).toContain(hog.error?.name);
      await hostile.run('import os, signal\nos.kill(-1, signal.SIGKILL)');
    } finally {
      await hostile.close();
    }
    expect(isAlive(template)).toBe(true);
    expect((await first.run('6 * 7')).results[0]?.data['text/plain']).toBe('42');
    const after = await Session.create({ backend });
    try {
      expect((await after.run('6 * 7')).results[0]?.data['text/plain']).toBe('42');
      expect(await templateOf(after)).toBe(template);
    } finally {
      await after.close();
    }
  });

  it('a template killed with SIGKILL loses no session, and the next session comes from a new one', async () => {
    const template = await templateOf(first);
    await first.run('kept = "before"');
    process.kill(template, 'SIGKILL');
    await expect.poll(() => isAlive(template)).toBe(false);
    // Its sessions were not its PID namespace's: they go on, state and all.
    expect((await first.run('kept')).results[0]?.data['text/plain']).toBe("'before'");
    expect((await second.run('6 * 7')).results[0]?.data['text/plain']).toBe('42');
    const after = await Session.create({ backend });
    try {
      const replacement = await templateOf(after);
      expect(templates()).toContain(replacement);
      expect(replacement).not.toBe(template);
      expect((await after.run('6 * 7')).results[0]?.data['text/plain']).toBe('42');
    } finally {
      await after.close();
    }
    // A session orphaned by its template still ends whole when closed.
    const orphaned = (await second.usage()).processIds ?? [];
    expect(orphaned.length).toBeGreaterThan(0);
    await second.close();
    for (const pid of orphaned) expect(isAlive(pid)).toBe(false);
  });
});

describe('starting by fork where it pays (SANDCELL_START=auto, the default)', () => {
  it("starts a process's first sandbox by exec, warms a template at its second, and forks once it is ready", async () => {
    const backend = createBubblewrapBackend({ start: 'auto' });
    const sessions: Session[] = [];
    try {
      sessions.push(await Session.create({ backend }));
      // By exec: the first of its processes is bwrap (the launcher's exec), not a template's fork.
      expect(commandLine(await firstProcess(sessions[0] as Session))).toMatch(/^\S*bwrap /);
      expect(backend.startPath()).toEqual({ mode: 'fork' });
      let forked: Session | undefined;
      await expect
        .poll(
          async () => {
            const session = await Session.create({ backend });
            sessions.push(session);
            if (commandLine(await templateOf(session)).includes('sandcell_zygote.py')) forked = session;
            return forked !== undefined;
          },
          { timeout: 30_000, interval: 200 },
        )
        .toBe(true);
      expect((await (forked as Session).run('6 * 7')).results[0]?.data['text/plain']).toBe('42');
    } finally {
      await Promise.all(sessions.map((session) => session.close()));
    }
  });
});

const onRuntime = createBubblewrapBackend({ start: 'fork', rootfs: 'runtime' });
describeWhenAvailable(
  "each root filesystem's own template",
  'bubblewrap-rootfs',
  await unavailableReason(onRuntime),
  () => {
    it('sessions of another root (an environment, or one rebuilt into a new directory) fork from a template that runs on it', async () => {
      const onHost = forking();
      const hostSession = await Session.create({ backend: onHost });
      const runtimeSession = await Session.create({ backend: onRuntime });
      try {
        const hostTemplate = await templateOf(hostSession);
        const runtimeTemplate = await templateOf(runtimeSession);
        expect(runtimeTemplate).not.toBe(hostTemplate);
        const root = (await onRuntime.report()).systemRoot;
        expect(commandLine(parentOf(runtimeTemplate))).toContain(`--ro-bind ${root}/usr /usr`);
        expect(commandLine(parentOf(hostTemplate))).not.toContain('/usr /usr');
        // The runtime's /usr has no bwrap; the host's has.
        const probe = 'import os\nos.path.exists("/usr/bin/bwrap")';
        expect((await runtimeSession.run(probe)).results[0]?.data['text/plain']).toBe('False');
        expect((await hostSession.run(probe)).results[0]?.data['text/plain']).toBe('True');
      } finally {
        await hostSession.close();
        await runtimeSession.close();
      }
    });
  },
);

/** The parent of a session's PID 1: its template when forked, bwrap when started by exec. */
async function templateOf(session: Session): Promise<number> {
  return parentOf(await firstProcess(session));
}
