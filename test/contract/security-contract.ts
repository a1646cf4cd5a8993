/**
 * The security contract every backend passes. Each case first runs a
 * harmless canary in the same session, so a sandbox that failed to start
 * cannot pass as "blocked"; then the attack must fail inside the session and
 * the host must be unaffected. The probes in every language of
 * CONTRACT_LANGUAGES, from a shell command, and the resource limits (bombs,
 * the memory budget, the disk, the timeout) have their own files, run from here.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileOperationError } from '../../src/errors.js';
import { connectionsDuring, withHostSecret } from '../support/host-bait.js';
import { attempt, canary } from './canary.js';
import { commandSecurityCases } from './command-security-cases.js';
import { type ContractOptions, markKnownGaps, withSession } from './contract-support.js';
import { languageSecurityCases } from './language-security-cases.js';
import { resourceLimitCases } from './resource-limit-cases.js';

// docker.test.ts runs the memory budget case on its fallback backend too.
export { expectOneMemoryBudget } from './resource-limit-cases.js';

const SYSCALL_PROBE = `
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def probe(name, number, *args):
    result = libc.syscall(number, *args)
    print(name, "allowed" if result >= 0 else "denied:" + errno.errorcode.get(ctypes.get_errno(), "?"))
`;

/**
 * What opening the supervisor's /proc files gives, where a backend's kernel differs from Linux: gVisor's
 * /proc (its 2022 release) lets the same uid open PID 1's environ although the supervisor is not dumpable
 * (what it shows is the options every kernel of the sandbox is started with, nothing the code's own kernel
 * lacked), and refuses its donated host descriptors with ENXIO.
 */
export interface SupervisorProcOutcomes {
  mem?: string;
  'fd/1'?: string;
  environ?: string;
}

export function runSecurityContract({
  name,
  createBackend,
  supervisorProc = {},
  knownGaps = {},
}: ContractOptions & {
  supervisorProc?: SupervisorProcOutcomes;
  /** Cases this backend is known to fail (markKnownGaps). */
  knownGaps?: Record<string, string>;
}): void {
  describe(`security contract: ${name}`, () => {
    const backend = createBackend();
    markKnownGaps(knownGaps);

    it('runs as an unprivileged user with no capabilities, no_new_privs and seccomp', async () => {
      const execution = await attempt(
        backend,
        'import ctypes, os\nstatus = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)\n' +
          '# PR_GET_NO_NEW_PRIVS: what the kernel holds, however its /proc words it (gVisor shows no NoNewPrivs line).\n' +
          'no_new_privs = ctypes.CDLL(None, use_errno=True).prctl(39, 0, 0, 0, 0)\n' +
          'print(os.getuid(), os.geteuid(), status["CapEff"].strip(), status["CapBnd"].strip(), no_new_privs, status["Seccomp"].strip())',
      );
      const [uid, euid, effective, bounding, noNewPrivs, seccomp] = execution.stdout.trim().split(' ');
      expect(uid).not.toBe('0');
      expect(euid).not.toBe('0');
      expect(effective).toBe('0000000000000000');
      expect(bounding).toBe('0000000000000000');
      expect(noNewPrivs).toBe('1');
      expect(seccomp).toBe('2');
    });

    it("cannot read /etc/shadow or a secret in the host user's home", async () => {
      await withHostSecret(async ({ directory: secretDirectory, file: secretFile, text: secret }) => {
        const execution = await attempt(
          backend,
          `import glob, os
for target in ["/etc/shadow", ${JSON.stringify(secretFile)}, "/root/.bashrc"]:
    try:
        print(target, "READ", open(target).read()[:200])
    except OSError as error:
        print(target, "blocked", type(error).__name__)
# /home/user is the session's own files (E2B's working directory), not the host's /home.
print("listing", glob.glob("/root/*") + [p for p in glob.glob("/home/*") if p != "/home/user"] + glob.glob(${JSON.stringify(`${secretDirectory}/*`)}))`,
        );
        expect(execution.stdout).not.toContain('READ');
        expect(execution.stdout).not.toContain(secret);
        expect(execution.stdout).toContain('listing []');
        expect(execution.stdout.match(/blocked/g)).toHaveLength(3);
      });
    });

    it('cannot write outside /mnt/data and /tmp; the host is untouched', async () => {
      const marker = `sandcell-pwned-${randomBytes(4).toString('hex')}`;
      const targets = [
        '/',
        '/etc',
        '/usr',
        '/usr/lib',
        '/opt/sandcell',
        '/root',
        '/home',
        '/var',
        '/dev',
        '/proc',
        '/mnt',
        '/bin',
      ];
      const execution = await attempt(
        backend,
        `import os
for directory in ${JSON.stringify(targets)}:
    try:
        with open(os.path.join(directory, ${JSON.stringify(marker)}), "w") as handle:
            handle.write("x")
        print(directory, "WROTE")
    except OSError as error:
        print(directory, "blocked")
for directory in ["/mnt/data", "/tmp", "/home/user", "/workspace"]:
    open(os.path.join(directory, "ok.txt"), "w").write("fine")
    print(directory, "writable")
print("same files", os.path.samefile("/mnt/data/ok.txt", "/home/user/ok.txt") and os.path.samefile("/mnt/data/ok.txt", "/workspace/ok.txt"))`,
      );
      // /home/user and /workspace are /mnt/data under E2B's and the Agents SDK's names: the same files, no new writable place.
      expect(execution.stdout).toContain('/home/user writable');
      expect(execution.stdout).toContain('/workspace writable');
      expect(execution.stdout).toContain('same files True');
      expect(execution.stdout).not.toContain('WROTE');
      expect(execution.stdout.match(/blocked/g)).toHaveLength(targets.length);
      expect(execution.stdout).toContain('/mnt/data writable');
      expect(execution.stdout).toContain('/tmp writable');
      for (const directory of targets) expect(existsSync(path.join(directory, marker))).toBe(false);
    });

    it('has no network: not an IP, not DNS, not the metadata service, not a listener on the host loopback', async () => {
      const connections = await connectionsDuring(async (port) => {
        const execution = await attempt(
          backend,
          `import socket
def connect(label, host, port):
    try:
        with socket.create_connection((host, port), timeout=2) as connection:
            print(label, "CONNECTED", connection.recv(100))
    except OSError as error:
        print(label, "blocked", type(error).__name__)
connect("ip", "1.1.1.1", 53)
connect("metadata", "169.254.169.254", 80)
connect("host-loopback", "127.0.0.1", ${port})
try:
    print("dns", "RESOLVED", socket.getaddrinfo("example.com", 80))
except OSError as error:
    print("dns", "blocked", type(error).__name__)
try:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.sendto(b"x", ("8.8.8.8", 53))
    print("udp", "SENT")
except OSError as error:
    print("udp", "blocked", type(error).__name__)
import os
print("interfaces", sorted(os.listdir("/sys/class/net")) if os.path.exists("/sys/class/net") else [])`,
        );
        expect(execution.stdout).not.toMatch(/CONNECTED|RESOLVED|SENT|host-secret/);
        expect(execution.stdout.match(/blocked/g)).toHaveLength(5);
      });
      expect(connections).toBe(0);
    });

    it('cannot see or signal host processes', async () => {
      const execution = await attempt(
        backend,
        `import os, signal
pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
commands = [open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")[0].decode() for pid in pids if os.path.exists(f"/proc/{pid}/cmdline")]
print("count", len(pids))
print("commands", commands)
try:
    os.kill(${process.pid}, signal.SIGKILL)
    print("KILLED host")
except OSError as error:
    print("signal", "blocked", type(error).__name__)`,
      );
      expect(execution.stdout).toContain('signal blocked');
      const count = Number(/count (\d+)/.exec(execution.stdout)?.[1]);
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThan(6);
      expect(execution.stdout).not.toMatch(/node|vitest|systemd|dockerd/);
    });

    it('cannot end its sandbox: the supervisor (PID 1, its parent) shrugs off signals, limits and /proc', async () => {
      await withSession(backend, {}, async (session) => {
        await canary(session);
        await session.run('kept = 42');
        const execution = await session.run(
          `import os, resource, signal, time
print("before", flush=True)
supervisor = os.getppid()
print("parent", supervisor)
for number in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
    os.kill(supervisor, number)
try:
    resource.prlimit(supervisor, resource.RLIMIT_CPU, (0, 0))  # the kernel would SIGKILL it
    print("prlimit ALLOWED")
except OSError as error:
    print("prlimit", type(error).__name__)
for name in ("mem", "fd/1", "environ"):
    try:
        open(f"/proc/{supervisor}/{name}", "r+b" if name == "mem" else "rb").close()
        print(name, "OPENED")
    except OSError as error:
        print(name, type(error).__name__)
time.sleep(0.5)
print("after", kept)`,
          { timeoutMs: 20_000 },
        );
        expect(execution.status).toBe('ok');
        const proc = {
          mem: 'PermissionError',
          'fd/1': 'PermissionError',
          environ: 'PermissionError',
          ...supervisorProc,
        };
        expect(execution.stdout).toBe(
          `before\nparent 1\nprlimit PermissionError\nmem ${proc.mem}\nfd/1 ${proc['fd/1']}\nenviron ${proc.environ}\nafter 42\n`,
        );
        expect(execution.stateLost).toBeUndefined();
        await canary(session);
      });
    });

    it('killing every process it can see spares the sandbox: the code goes on, each context it ended says so once', async () => {
      await withSession(backend, {}, async (session) => {
        await canary(session);
        const other = await session.createContext({ language: 'python' });
        await session.run('kept = "python"');
        await session.run('mine = "other"', { context: other.id });
        const sleeper = await session.commands.run('sleep 600', { background: true });
        const execution = await session.run(
          `import os, signal, time
print("before", flush=True)
os.kill(-1, signal.SIGKILL)
os.kill(1, signal.SIGKILL)
# Until the supervisor has reaped the rest: then it has told the host which context ended.
deadline = time.monotonic() + 10
while time.monotonic() < deadline and [pid for pid in os.listdir("/proc") if pid.isdigit() and int(pid) not in (1, os.getpid())]:
    time.sleep(0.05)
print("after", kept)`,
          { timeoutMs: 20_000 },
        );
        expect(execution).toMatchObject({ status: 'ok', stdout: 'before\nafter python\n' });
        expect(execution.stateLost).toBeUndefined();
        expect(await sleeper.wait()).toMatchObject({ exitCode: 128 + 9, signal: 'SIGKILL' });
        const lost = await session.run('mine', { context: other.id });
        expect(lost.error?.name).toBe('NameError');
        expect(lost.stateLostReason).toBe(
          `The kernel stopped between runs (killed by SIGKILL), so it was restarted and the state of context "${other.id}" (variables, functions) was lost. Files in /mnt/data were kept.`,
        );
        expect((await session.run('mine = 1', { context: other.id })).stateLost).toBeUndefined();
        expect((await session.run('kept')).results[0]?.data['text/plain']).toBe("'python'");
        await canary(session);
      });
    });

    it('blocks ptrace, mount, unshare, setns, keyctl, bpf, perf, io_uring, userfaultfd and module loading', async () => {
      const execution = await attempt(
        backend,
        `${SYSCALL_PROBE}
probe("ptrace", 101, 16, 1, 0, 0)              # PTRACE_ATTACH to pid 1
probe("mount", 165, b"none", b"/tmp", b"tmpfs", 0, 0)
probe("umount2", 166, b"/proc", 0)
probe("unshare", 272, 0x10000000)              # CLONE_NEWUSER
probe("unshare-net", 272, 0x40000000)
probe("setns", 308, 0, 0)
probe("chroot", 161, b"/tmp")
probe("pivot_root", 155, b"/tmp", b"/tmp")
probe("keyctl", 250, 0, 0, 0, 0, 0)
probe("add_key", 248, b"user", b"k", b"v", 1, 0xfffffffd)
probe("bpf", 321, 0, 0, 0)
probe("perf_event_open", 298, 0, 0, -1, -1, 0)
probe("io_uring_setup", 425, 1, 0)
probe("userfaultfd", 323, 0)
probe("init_module", 175, 0, 0, b"")
probe("kexec_load", 246, 0, 0, 0, 0)
probe("personality", 135, 0x0040000)
probe("open_tree", 428, -100, b"/", 0)
probe("fsopen", 430, b"tmpfs", 0)
probe("process_vm_readv", 310, 1, 0, 0, 0, 0, 0)`,
      );
      const lines = execution.stdout.trim().split('\n');
      expect(lines).toHaveLength(20);
      for (const line of lines) expect(line).toMatch(/ denied:/);
    });

    it('blocks terminal injection (TIOCSTI, TIOCLINUX) even with high bits set', async () => {
      const execution = await attempt(
        backend,
        `import fcntl, errno
for name, request in [("TIOCSTI", 0x5412), ("TIOCLINUX", 0x541C), ("TIOCSTI-high-bits", 0x5412 | (1 << 32))]:
    try:
        fcntl.ioctl(0, request, b"x")
        print(name, "ALLOWED")
    except OSError as error:
        print(name, errno.errorcode[error.errno])`,
      );
      // EPERM comes from seccomp; without it the kernel would answer ENOTTY for /dev/null.
      expect(execution.stdout.trim().split('\n')).toEqual([
        'TIOCSTI EPERM',
        'TIOCLINUX EPERM',
        'TIOCSTI-high-bits EPERM',
      ]);
    });

    it('allows only unix and inet sockets: netlink, packet and others are refused', async () => {
      const execution = await attempt(
        backend,
        `import socket
for name, family, kind in [("unix", socket.AF_UNIX, socket.SOCK_STREAM), ("inet", socket.AF_INET, socket.SOCK_STREAM), ("netlink", socket.AF_NETLINK, socket.SOCK_RAW), ("packet", socket.AF_PACKET, socket.SOCK_RAW), ("vsock", 40, socket.SOCK_STREAM), ("alg", 38, socket.SOCK_SEQPACKET)]:
    try:
        socket.socket(family, kind).close()
        print(name, "allowed")
    except OSError as error:
        print(name, "denied")`,
      );
      expect(execution.stdout.trim().split('\n')).toEqual([
        'unix allowed',
        'inet allowed',
        'netlink denied',
        'packet denied',
        'vsock denied',
        'alg denied',
      ]);
    });

    it('cannot write /proc/sys', async () => {
      const execution = await attempt(
        backend,
        `for target in ["/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"]:
    try:
        open(target, "w").write("1")
        print(target, "WROTE")
    except OSError as error:
        print(target, "blocked")`,
      );
      expect(execution.stdout).not.toContain('WROTE');
      expect(execution.stdout.match(/blocked/g)).toHaveLength(3);
      const mounts = await attempt(
        backend,
        'print([line.split()[5].split(",")[0] for line in open("/proc/self/mountinfo") if line.split()[4] == "/proc/sys"])',
      );
      expect(mounts.stdout.trim()).toBe("['ro']");
    });

    it("sees none of the host's boot arguments, sandbox command line or host paths in /proc", async () => {
      const hostBoot = readFileSync('/proc/cmdline', 'utf8').trim();
      expect(hostBoot.length).toBeGreaterThan(0);
      const execution = await attempt(
        backend,
        `import os
def read(path):
    try:
        return open(path, "rb").read().replace(b"\\0", b" ").decode(errors="replace")
    except OSError as error:
        return "unreadable " + type(error).__name__
print("boot:", read("/proc/cmdline"))
for pid in sorted(name for name in os.listdir("/proc") if name.isdigit()):
    print("cmdline", pid + ":", read(f"/proc/{pid}/cmdline"))
print("mountinfo:", read("/proc/self/mountinfo"))`,
      );
      const output = execution.stdout;
      expect(output).toMatch(/^cmdline 1: ./m);
      expect(/^boot: (.*)$/m.exec(output)?.[1]?.trim()).toBe('');
      for (const word of hostBoot.split(/\s+/).filter((word) => word.length > 8)) expect(output).not.toContain(word);
      // No sandbox-runtime option, runtime directory or kernel option list in any command line or mount.
      // (A bind mount's source path shows in mountinfo by design: /usr of a runtime root filesystem does.
      // The session's ingress socket is mounted at /run/sandcell/ingress.sock inside: that mount point is
      // the sandbox's own path, not the host's runtime directory, so it alone is taken out first.)
      const withoutIngress = output.replaceAll(' /run/sandcell/ingress.sock ', ' ');
      expect(withoutIngress).not.toMatch(/--ro-bind|--bind|--setenv|--seccomp|SANDCELL_KERNEL_OPTIONS|\/run\//);
    });

    it("does not see the host's /usr/local", async () => {
      let marker = path.join('/usr/local/share', `sandcell-host-only-${randomBytes(4).toString('hex')}`);
      const planted = marker;
      try {
        mkdirSync(path.dirname(marker), { recursive: true });
        writeFileSync(marker, 'host only');
      } catch (error) {
        // A read-only root (sandcell's container, test/container/): what its /usr/local holds is the marker.
        if ((error as NodeJS.ErrnoException).code !== 'EROFS') throw error;
        marker = '/usr/local/bin/sandcell';
        expect(existsSync(marker)).toBe(true);
      }
      try {
        const execution = await attempt(
          backend,
          `import os
files = [os.path.join(root, name) for root, _, names in os.walk("/usr/local") for name in names]
print("files", len(files), files[:5])
print("marker", os.path.exists(${JSON.stringify(marker)}))
try:
    open("/usr/local/planted", "w").write("x")
    print("WROTE")
except OSError:
    print("read-only")`,
        );
        expect(execution.stdout).toContain('files 0 []');
        expect(execution.stdout).toContain('marker False');
        expect(execution.stdout).toContain('read-only');
      } finally {
        if (marker === planted) rmSync(marker, { force: true });
      }
    });

    it('sees none of the host environment', async () => {
      const canaryName = 'SANDCELL_TEST_CANARY_API_KEY';
      const value = `sk-${randomBytes(8).toString('hex')}`;
      process.env[canaryName] = value;
      try {
        const execution = await attempt(
          backend,
          'import os\nprint(sorted(os.environ))\nprint(open("/proc/self/environ", "rb").read())\nprint(open("/proc/1/environ", "rb").read() if os.access("/proc/1/environ", os.R_OK) else b"")',
        );
        expect(execution.stdout).not.toContain(value);
        expect(execution.stdout).not.toContain(canaryName);
        expect(execution.stdout).not.toMatch(/OPENAI|ANTHROPIC|AWS_|npm_/);
      } finally {
        delete process.env[canaryName];
      }
    });

    it('inherits no file descriptor from the host', async () => {
      const execution = await attempt(
        backend,
        `import os, subprocess
targets = []
for name in os.listdir("/proc/self/fd"):
    try:
        targets.append(os.readlink(f"/proc/self/fd/{name}"))
    except OSError:
        pass  # the descriptor listdir itself used
print("kernel", sorted(set(target.split(":")[0] for target in targets)))
print("sockets", sum(target.startswith("socket:") for target in targets))
print("child", subprocess.run(["ls", "/proc/self/fd"], capture_output=True, text=True).stdout.split())`,
      );
      const kernel = /kernel (.*)/.exec(execution.stdout)?.[1] ?? '';
      // pipes to the host, /dev/null, and the directory being listed: nothing else.
      const kinds = JSON.parse(kernel.replace(/'/g, '"')) as string[];
      expect(kinds).toContain('pipe');
      for (const kind of kinds) expect(['pipe', 'socket', '/dev/null', 'anon_inode']).toContain(kind);
      // The two ends of the protocol channel (stdio socketpairs on some backends), nothing more.
      expect(Number(/sockets (\d+)/.exec(execution.stdout)?.[1])).toBeLessThanOrEqual(2);
      const child = JSON.parse((/child (.*)/.exec(execution.stdout)?.[1] ?? '[]').replace(/'/g, '"')) as string[];
      expect(child.map(Number).every((fd) => fd <= 3)).toBe(true);
    });

    it('never lets session.files follow a link the sandbox planted', async () => {
      await withSession(backend, {}, async (session) => {
        await canary(session);
        const planted = await session.run(
          `import os
os.symlink("/etc/passwd", "/mnt/data/passwd-link")
os.symlink("/root", "/mnt/data/root-link")
os.symlink("/", "/mnt/data/slash")
open("/mnt/data/own.txt", "w").write("mine")
os.link("/mnt/data/own.txt", "/mnt/data/hard-link")
try:
    os.link("/etc/passwd", "/mnt/data/passwd-hard")
    print("hard link to /etc/passwd MADE")
except OSError as error:
    print("cross-mount hard link refused")`,
        );
        expect(planted.stdout).toContain('refused');
        for (const target of ['passwd-link', 'root-link/.bashrc', 'slash/etc/passwd', 'hard-link']) {
          const error = await session.files.read(target).then(
            () => undefined,
            (failure: unknown) => failure,
          );
          expect(error).toBeInstanceOf(FileOperationError);
        }
        await expect(session.files.list('slash')).rejects.toBeInstanceOf(FileOperationError);
        await expect(session.files.write('slash/etc/x', 'x')).rejects.toBeInstanceOf(FileOperationError);
        const listing = await session.files.list();
        expect(listing.find((entry) => entry.path === 'passwd-link')?.type).toBe('symlink');
      });
    });

    resourceLimitCases(backend);
    languageSecurityCases(backend);
    commandSecurityCases(backend);
  });
}
