"""sandcell's session template (a zygote): one warm Python per environment,
past the imports every session makes, forked for each new session.

The host (src/backends/bubblewrap/zygote.ts) starts it as root, through bwrap,
in a mount namespace of its own: the host's filesystem with the environment's
/usr, an empty /tmp, a fresh /proc, and the kernel files at /opt/sandcell,
where a session has them. It holds no secret and no session's data.

Its channel is its stdin and stdout, newline-delimited JSON. The first line
is its configuration; then requests `start` and `kill`, answered by events
`ready`, `started`, `failed` and `exited` (each with the session's token).

A start forks a helper that, still root, joins the session's cgroups,
connects to the host's socket twice (the session's channel, then its
diagnostics), drops to the session's host uid and unshares every namespace.
It forks the session's PID 1, reports that pid and exits. PID 1 builds the
session's root in a tmpfs of its own, pivots into it, forbids further user
namespaces, drops every capability, loads the seccomp filter and becomes the
supervisor (sandcell_supervisor.main_forked), whose Python kernel is one more
fork. After the fork a session is as isolated as one bwrap starts: nothing of
the template's is left open in it, and no memory is shared writably.

The template stays single-threaded (a fork copies only the calling thread),
is the subreaper of every session (the helpers exit at once), and reports
each session's end. Its own death ends no session: they are not in a PID
namespace of its.
"""

import base64
import ctypes
import gc
import json
import os
import select
import signal
import socket
import stat
import sys
import threading

KERNEL_DIRECTORY = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, KERNEL_DIRECTORY)

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_SLAVE, MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 19, 1 << 21
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER = 4, 24, 36
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
# statvfs flags → mount flags a read-only remount must keep (a user namespace may not clear locked ones).
STATVFS_FLAGS = ((1, MS_RDONLY), (2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME))
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
DEVICE_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore", "ptmx": "pts/ptmx"}
SANDBOX_ID = 1000
SANDBOX_HOSTNAME = b"sandbox"
START_TIMEOUT_S = 10.0
TOKEN_BYTES = 32
# What a session's /tmp may get of the template's (see scratch_files).
SCRATCH_BYTES = 4 << 20


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def check(result, what):
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, "%s: %s" % (what, os.strerror(number)))


def encode(text):
    return text.encode("utf-8", "surrogateescape") if text is not None else None


def mount(source, target, kind, flags, data=None):
    check(libc.mount(encode(source), encode(target), encode(kind), flags, encode(data)), "mount %s" % target)


def remount_read_only(target):
    flags = os.statvfs(target).f_flag
    kept = 0
    for flag, mount_flag in STATVFS_FLAGS:
        if flags & flag:
            kept |= mount_flag
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


def bind(source, target, read_only=True, recursive=False):
    """Binds `source` at `target`, making the mount point (a file or a directory) like it."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))
    if read_only:
        remount_read_only(target)


def write_file(path, content, mode=0o444):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    descriptor = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)
    os.chmod(path, mode)


def read_file(path):
    with open(path, "rb") as handle:
        return handle.read()


# --- the session: the helper (root, then the session's uid) -----------------


def connect(path, token, kind):
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    channel.connect(path)
    channel.sendall(token.encode("ascii") + kind)
    return channel.detach()


def helper(request, report, kernel_files, host_mounts, scratch):
    """Runs in the forked helper; returns only in the session's PID 1."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # The host's mounts as they are now (a session's storage is mounted after the template started), which the
    # session's own mount namespace copies: every path of the request is the host's.
    check(libc.setns(host_mounts, CLONE_NEWNS), "setns to the host's mount namespace")
    pid = str(os.getpid())
    for procs in request.get("cgroupProcs", []):
        with open(procs, "w") as handle:
            handle.write(pid)
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write(str(request["oomScoreAdj"]))
    # What the session's root is made of that only the template's view has, read now.
    files = {target: read_file(source) for target, source in request["files"].items()}
    for target, content in request.get("contents", {}).items():
        files[target] = base64.b64decode(content)
    seccomp = read_file(request["seccompFilter"])
    channel = connect(request["socket"], request["token"], b"c")
    diagnostics = connect(request["socket"], request["token"], b"d")
    os.dup2(channel, 0)
    os.dup2(channel, 1)
    os.dup2(diagnostics, 2)
    # Nothing of the template's stays open: only the channel and the report to the template.
    os.closerange(3, report)
    os.closerange(report + 1, 1 << 20)
    uid, gid = int(request["uid"]), int(request["gid"])
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    # A uid change makes a process non-dumpable, and /proc/self of a non-dumpable one is root's: its maps unwritable.
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (SANDBOX_ID, uid)), ("gid_map", "%d %d 1" % (SANDBOX_ID, gid))):
        with open("/proc/self/" + name, "w") as handle:
            handle.write(text)
    child = os.fork()
    if child:
        os.write(report, ("%d\n" % child).encode("ascii"))
        os._exit(0)
    os.close(report)
    build_root(request, files, kernel_files, scratch)
    confine(seccomp)
    os.environ.clear()
    os.environ.update(request["environment"])
    # What Python worked out from the template's environment and is read again from the session's.
    import site

    site.USER_BASE = None
    site.USER_SITE = None
    os.chdir("/mnt/data")


def build_root(request, files, kernel, scratch):
    """The session's root in a tmpfs of its own, as bwrap's arguments build it
    (src/backends/bubblewrap/arguments.ts), then pivots into it."""
    mount(None, "/", None, MS_SLAVE | MS_REC)
    system = request["systemRoot"]
    # Every host path bound in, held open before the root's tmpfs goes over /tmp, where some may live (a gate's
    # socket does): bound from /proc/self/fd, they are found whatever is mounted over their names.
    held = []

    def hold(path):
        held.append(os.open(path, os.O_PATH | os.O_CLOEXEC))
        return "/proc/self/fd/%d" % held[-1]

    usr = hold(os.path.join(system, "usr"))
    etc = {name: hold(os.path.join(system, "etc", name)) for name in request["etcFiles"] if os.path.exists(os.path.join(system, "etc", name))}
    devices = {name: hold("/dev/" + name) for name in DEVICES}
    data = hold(request["dataDirectory"])
    gate = hold(request["gateSocket"]) if request.get("gateSocket") else None
    root = "/tmp"
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    bind(usr, root + "/usr", recursive=True)
    for link in ("bin", "sbin", "lib", "lib64"):
        os.symlink("usr/" + link, os.path.join(root, link))
    os.makedirs(root + "/proc")
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # No further user namespaces (bwrap's --disable-userns): the limit is the session's namespace's own.
    with open(root + "/proc/sys/user/max_user_namespaces", "w") as handle:
        handle.write("0")
    bind(root + "/proc/sys", root + "/proc/sys")
    build_dev(root + "/dev", devices)
    if os.path.isdir(root + "/usr/local"):
        mount("tmpfs", root + "/usr/local", "tmpfs", MS_NOSUID | MS_NODEV, "size=4096,mode=0755")
        remount_read_only(root + "/usr/local")
    for name, source in etc.items():
        bind(source, root + "/etc/" + name, recursive=True)
    for target, content in files.items():
        if target.startswith("/proc/"):
            # Over a file of procfs: a bind of a copy, which goes with the copy's name.
            copy = root + "/.sandcell-copy"
            write_file(copy, content)
            bind(copy, root + target)
            os.unlink(copy)
        else:
            write_file(root + target, content)
    for name, content in kernel.items():
        write_file(root + "/opt/sandcell/" + name, content)
    os.makedirs(root + "/tmp")
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=0755" % int(request["tmpBytes"]))
    # What the template's imports left in its /tmp (matplotlib's configuration directory and font cache), as a
    # session that made those imports itself would have it.
    for relative, mode, content in scratch:
        target = os.path.join(root, "tmp", relative)
        if content is None:
            os.makedirs(target, mode=mode, exist_ok=True)
            os.chmod(target, mode)
        else:
            write_file(target, content, mode)
    bind(data, root + "/mnt/data", read_only=False)
    bind(data, root + "/home/user", read_only=False)
    if gate is not None:
        bind(gate, root + request["gateSocketMount"], read_only=False)
    for descriptor in held:
        os.close(descriptor)
    remount_read_only(root + "/dev")
    os.chdir(root)
    check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "umount the template's root")
    os.chdir("/")
    remount_read_only("/")


def build_dev(dev, devices):
    """A /dev of the few devices a program expects, as bwrap's --dev makes it."""
    os.makedirs(dev)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID, "mode=0755")
    for name, source in devices.items():
        bind(source, dev + "/" + name, read_only=False)
    for name, target in DEVICE_LINKS.items():
        os.symlink(target, dev + "/" + name)
    os.makedirs(dev + "/shm")
    os.makedirs(dev + "/pts")
    mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")


def loopback_up():
    """A new network namespace's loopback is down: bring it up, as bwrap does (the network forwarder and
    anything the code serves to itself listen on it)."""
    import fcntl
    import struct

    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP, IFF_RUNNING = 0x8913, 0x8914, 0x1, 0x40
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(probe.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP | IFF_RUNNING))


def confine(seccomp):
    """What bwrap does last: the host name, no capabilities, a session of its
    own, the filter."""
    check(libc.sethostname(SANDBOX_HOSTNAME, len(SANDBOX_HOSTNAME)), "sethostname")
    loopback_up()
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for capability in range(64):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    check(libc.capset(ctypes.byref(CapHeader(0x20080522, 0)), (CapData * 2)()), "capset")
    os.setsid()
    import seccomp_loader

    seccomp_loader.load_program(seccomp)


def session_main(request, report, kernel_module, kernel_files, host_mounts, scratch):
    """The forked helper's whole life; in the session's PID 1, the supervisor's."""
    try:
        helper(request, report, kernel_files, host_mounts, scratch)
    except BaseException as error:  # noqa: BLE001 - told to the template (or, in PID 1, the host), then gone
        message = ("the session could not be isolated: %s\n" % error).encode("utf-8", "replace")
        try:
            os.write(2 if os.getpid() == 1 else report, message)
        except OSError:
            pass
        os._exit(1)
    try:
        import sandcell_process
        import sandcell_supervisor

        # What a bwrap-started sandbox's PID 1 shows (src/backends/bubblewrap/arguments.ts).
        sandcell_process.set_command_line([sys.executable, "-I", "-B", "-S", KERNEL_DIRECTORY + "/sandcell_supervisor.py"])

        def kernel_main():
            kernel_module.configure(kernel_module._read_options())
            kernel_module.main()

        sandcell_supervisor.main_forked(kernel_main)
    except BaseException as error:  # noqa: BLE001
        os.write(2, ("the supervisor failed: %s\n" % error).encode("utf-8", "replace"))
    os._exit(1)


# --- the template --------------------------------------------------------------


def scratch_files(top):
    """The directories and files under `top`, parents first, as (relative path, mode, bytes or None for a
    directory), within SCRATCH_BYTES: what every session's /tmp starts with."""
    entries, total = [], 0
    for directory, names, files in os.walk(top):
        relative = os.path.relpath(directory, top)
        if relative != ".":
            entries.append((relative, stat.S_IMODE(os.stat(directory).st_mode), None))
        for name in files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or total + info.st_size > SCRATCH_BYTES:
                continue
            total += info.st_size
            entries.append((os.path.relpath(path, top), stat.S_IMODE(info.st_mode), read_file(path)))
    return entries


def load_kernel():
    """The Python kernel's module, loaded as sandcell_process will find it in a fork (by its path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sandcell_kernel", os.path.join(KERNEL_DIRECTORY, "sandcell_kernel.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# What a session imports on its way to its first cell, besides the preload: the supervisor's modules, and
# the IPython the kernel's shell is made of (sandcell_python_shell.create_shell).
SESSION_MODULES = (
    "sandcell_supervisor",
    "sandcell_routes",
    "sandcell_user_site",
    "seccomp_loader",
    "bdb",
    "IPython.core.interactiveshell",
    "IPython.core.autocall",
    "IPython.core.displayhook",
    "IPython.core.displaypub",
    "traitlets",
)


# What a session's first DataFrame and first chart load lazily (pandas' describe and HTML, matplotlib's Agg
# canvas and fonts), done once here in a namespace of their own: a session that uses them shares those pages
# instead of making its own. Each runs only when its module was preloaded.
WARM_UPS = {
    "pandas": """
import pandas
frame = pandas.DataFrame({"a": range(10), "b": [0.5] * 10})
frame["c"] = frame.a + frame.b
frame.describe()
repr(frame)
frame._repr_html_()
""",
    "matplotlib": """
import io
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
figure = Figure()
figure.add_subplot().plot([1, 2, 3], [3, 1, 2])
FigureCanvasAgg(figure).print_png(io.BytesIO())
""",
}


def warm(preload):
    """Everything a session would import before its first cell; returns what failed to import."""
    import importlib

    failed = []
    for name in SESSION_MODULES + tuple(preload):
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - a missing optional package costs only its warmth
            failed.append("%s: %s" % (name, error))
    for name, code in WARM_UPS.items():
        if name not in preload or name not in sys.modules:
            continue
        try:
            exec(code, {"__name__": "sandcell_warm_up"})
        except Exception as error:  # noqa: BLE001
            failed.append("warming %s: %s" % (name, error))
    return failed


class Template:
    def __init__(self, config):
        self.config = config
        self.sessions = {}  # the session's PID 1 → token
        self.kernel = None
        self.kernel_files = {}
        self.host_mounts = None
        self.scratch = []

    def send(self, message):
        data = (json.dumps(message) + "\n").encode("utf-8")
        while data:
            data = data[os.write(1, data) :]

    def boot(self):
        os.environ.clear()
        os.environ.update(self.config.get("environment", {}))
        check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
        # The host process's mount namespace, which each session starts from (see helper).
        self.host_mounts = os.open("/proc/%d/ns/mnt" % int(self.config["hostPid"]), os.O_RDONLY | os.O_CLOEXEC)
        self.kernel = load_kernel()
        # Copied into every session's /opt/sandcell, as bwrap copies them.
        for name in sorted(os.listdir(KERNEL_DIRECTORY)):
            if name.startswith("sandcell_"):
                self.kernel_files[name] = read_file(os.path.join(KERNEL_DIRECTORY, name))
        failed = warm(self.config.get("preload", []))
        try:
            self.kernel.prepare()
        except Exception as error:  # noqa: BLE001 - each session then makes its own shell
            failed.append("the kernel's shell: %s" % error)
        self.scratch = scratch_files("/tmp")
        threads = [thread.name for thread in threading.enumerate() if thread is not threading.main_thread()]
        if threads:
            # A fork copies the calling thread alone: locks the others held would stay held in every session.
            raise RuntimeError("the template's imports started threads (%s): sessions cannot be forked from it" % ", ".join(threads))
        import sandcell_process

        sandcell_process.note_template_modules()
        # The objects of the imports stay where they are: a session's collections do not touch (and copy) their pages.
        # No collection first: the garbage it would free leaves holes in the template's pages, which a session's
        # first objects fill, each copying its page (measured: 0.5 MB more per session after ten pandas cells).
        gc.freeze()
        self.send({"type": "ready", "pid": os.getpid(), "failed": failed})

    def start(self, request):
        token = request.get("token")
        if not isinstance(token, str) or len(token) != TOKEN_BYTES:
            return
        report_read, report_write = os.pipe()
        try:
            helper_pid = os.fork()
        except OSError as error:
            os.close(report_read)
            os.close(report_write)
            self.send({"type": "failed", "token": token, "message": "fork: %s" % error})
            return
        if helper_pid == 0:
            os.close(report_read)
            session_main(request, report_write, self.kernel, self.kernel_files, self.host_mounts, self.scratch)
        os.close(report_write)
        answer = self.read_report(report_read)
        os.close(report_read)
        try:
            pid = int(answer.decode("ascii").strip())
        except ValueError:
            pid = None
            try:
                os.kill(helper_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # The helper exits as it reports: reaped here, its CPU is the part of the start no process of the session
        # counts (the session's usage adds it).
        _, _, usage = os.wait4(helper_pid, 0)
        if pid is None:
            message = answer.decode("utf-8", "replace").strip() or "the session's helper ended without a word"
            self.send({"type": "failed", "token": token, "message": message})
            return
        self.sessions[pid] = token
        self.send({"type": "started", "token": token, "pid": pid, "cpuSeconds": usage.ru_utime + usage.ru_stime})

    def read_report(self, descriptor):
        answer = b""
        while len(answer) < 4096:
            readable, _, _ = select.select([descriptor], [], [], START_TIMEOUT_S)
            if not readable:
                return b"the session took over %d s to start" % START_TIMEOUT_S
            chunk = os.read(descriptor, 4096)
            if not chunk:
                break
            answer += chunk
        return answer

    def kill(self, request):
        for pid, token in self.sessions.items():
            if token == request.get("token"):
                # Still our child (not yet reaped), so the pid is still its: PID 1 takes its namespace with it.
                os.kill(pid, signal.SIGKILL)

    def reap(self):
        from sandcell_event_loop import ended_children, exit_status

        for pid, status in ended_children():
            token = self.sessions.pop(pid, None)
            if token is None:
                continue  # a helper, or an orphan of a session's that came to us
            code, signal_name = exit_status(status)
            self.send({"type": "exited", "token": token, "code": code, "signal": signal_name})

    def serve(self):
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        os.set_blocking(wake_read, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda number, frame: None)
        pending = b""
        while True:
            readable, _, _ = select.select([0, wake_read], [], [])
            if wake_read in readable:
                try:
                    os.read(wake_read, 4096)
                except BlockingIOError:
                    pass
                self.reap()
            if 0 in readable:
                chunk = os.read(0, 1 << 16)
                if not chunk:
                    return  # the host is gone; the sessions end with their channels
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    self.handle(line)
                self.reap()

    def handle(self, line):
        try:
            request = json.loads(line)
        except ValueError:
            return
        if not isinstance(request, dict):
            return
        if request.get("type") == "start":
            self.start(request)
        elif request.get("type") == "kill":
            self.kill(request)


def main():
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        line += chunk
    template = Template(json.loads(line))
    template.boot()
    template.serve()


if __name__ == "__main__":
    main()
