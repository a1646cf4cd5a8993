"""A session forked from its template (sandcell_zygote.py): how the fork
isolates itself, as bwrap's arguments isolate a session bwrap starts
(src/backends/bubblewrap/arguments.ts).

A start forks a helper that, still root, joins the session's cgroups,
connects to the host's socket twice (the session's channel, then its
diagnostics), drops to the session's host uid and unshares every namespace.
It forks the session's PID 1, reports that pid and exits. PID 1 builds the
session's root in a tmpfs of its own, pivots into it, forbids further user
namespaces, drops every capability, loads the seccomp filter and becomes the
supervisor (sandcell_supervisor.main_forked), whose Python kernel is one more
fork. After the fork a session is as isolated as one bwrap starts: nothing of
the template's is left open in it, and no memory is shared writably.
"""

import base64
import ctypes
import errno
import os
import signal
import socket
import sys

KERNEL_DIRECTORY = os.path.dirname(os.path.abspath(__file__))

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_SLAVE, MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 19, 1 << 21
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_CAPBSET_DROP = 4, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
# statvfs flags → mount flags a read-only remount must keep (a user namespace may not clear locked ones).
STATVFS_FLAGS = ((1, MS_RDONLY), (2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME))
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
DEVICE_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore", "ptmx": "pts/ptmx"}
SANDBOX_ID = 1000
SANDBOX_HOSTNAME = b"sandbox"


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
    ingress = hold(request["ingressSocket"]) if request.get("ingressSocket") else None
    volumes = [(hold(mount["source"]), mount["target"], bool(mount["readOnly"])) for mount in request.get("mounts", [])]
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
    bind(data, root + "/workspace", read_only=False)
    if gate is not None:
        bind(gate, root + request["gateSocketMount"], read_only=False)
    if ingress is not None:
        bind(ingress, root + request["ingressSocketMount"], read_only=False)
    for source, target, read_only in volumes:
        # A mount point below /home/user is made in the session's files, where its code may have left a
        # symlink: one leading out of the new root is refused rather than followed.
        for _ in range(2):
            if not os.path.realpath(root + target).startswith(root + "/"):
                raise OSError(errno.ELOOP, "%s leads out of the sandbox (a symlink in the session's files)" % target)
            os.makedirs(root + target, exist_ok=True)
        bind(source, root + target, read_only=read_only)
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
