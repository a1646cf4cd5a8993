"""A probe of starting sessions by forking a warm process (issue 31), not used by sandcell yet.

Run as root with Debian's Python: `/usr/bin/python3 bench/fork-probe.py [SESSIONS]`.

One process imports numpy, pandas, matplotlib and IPython (the zygote). Each session is a fork of
it that isolates itself the way a bubblewrap session is isolated today, then answers `1 + 1` with
pandas:
  1. becomes a host uid of its own (from the top of sandcell's default range), and dumpable again
     so that it may write its own uid map;
  2. unshares user, mount, PID, network, IPC and UTS namespaces, and maps uid 1000 to that uid;
  3. forks PID 1 of the new PID namespace, which builds a root in a tmpfs of its own (/usr and /etc
     bound read-only, a new /proc, its own /tmp and /mnt/data) and pivots into it;
  4. forbids further user namespaces, makes /proc/sys and / read-only, drops every capability,
     and loads sandcell's seccomp filter (the one `sandcell doctor` compiled into
     ~/.cache/sandcell).
It prints what the first session sees (its uid map, PID, capabilities, seccomp mode, and whether
it can make a user namespace or write /proc/sys), then the wall time from fork to the answer, the
CPU each session cost, and each session's memory once all of them are alive (PSS, and the pages it
holds alone).

Not yet covered: the session's cgroup, the network gate's socket, the supervisor and kernel
processes and their channel to the host, IPython's shell per session.
"""

import ctypes
import gc
import glob
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "kernel"))
import seccomp_loader  # noqa: E402

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_SLAVE = 1, 2, 4, 32, 4096, 16384, 1 << 19
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_CAPBSET_DROP = 4, 24
SYS_PIVOT_ROOT = 155  # x86_64
FIRST_UID = 0x75ACFF00  # the top of sandcell's default uid range


def check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, "%s: %s" % (what, os.strerror(error)))


def mount(source, target, kind, flags, data=None):
    encode = lambda text: text.encode() if text else None  # noqa: E731
    check(libc.mount(encode(source), encode(target), encode(kind), flags, encode(data)), "mount " + target)


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def isolate(uid, filter_bytes):
    """Steps 1 to 4; returns in PID 1 of the session's namespaces (its parent waits and exits)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", "1000 %d 1" % uid), ("gid_map", "1000 %d 1" % uid)):
        with open("/proc/self/" + name, "w") as handle:
            handle.write(text)
    child = os.fork()
    if child:
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    mount(None, "/", None, MS_SLAVE | MS_REC)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m")
    root = "/tmp/root"
    os.makedirs(root)
    mount(root, root, None, MS_BIND)
    for directory in ("usr", "etc", "proc", "dev", "tmp", "mnt/data"):
        os.makedirs(os.path.join(root, directory))
    for link in ("bin", "lib", "lib64", "sbin"):
        os.symlink("usr/" + link, os.path.join(root, link))
    mount("/usr", root + "/usr", None, MS_BIND | MS_REC)
    mount("/etc", root + "/etc", None, MS_BIND | MS_REC)
    mount("/dev", root + "/dev", None, MS_BIND | MS_REC)
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV)
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=512m")
    mount("tmpfs", root + "/mnt/data", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g")
    with open(root + "/tmp/filter.bpf", "wb") as handle:
        handle.write(filter_bytes)
    os.chdir(root)
    check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "umount2")
    os.chdir("/mnt/data")
    libc.sethostname(b"sandbox", 7)
    with open("/proc/sys/user/max_user_namespaces", "w") as handle:
        handle.write("0")
    mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)
    mount(None, "/proc/sys", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    for capability in range(64):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    check(libc.capset(ctypes.byref(CapHeader(0x20080522, 0)), (CapData * 2)()), "capset")
    os.setsid()
    seccomp_loader.load("/tmp/filter.bpf")
    os.unlink("/tmp/filter.bpf")


def session(uid, filter_bytes, report, hold_s):
    isolate(uid, filter_bytes)
    value = int(pandas.Series([1, 1]).sum())
    status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
    seen = {
        "value": value,
        "uid_map": open("/proc/self/uid_map").read().split(),
        "pid": os.getpid(),
        "hostname": os.uname().nodename,
        "mounts": sum(1 for _ in open("/proc/self/mountinfo")),
        **{name: status[name].strip() for name in ("CapEff", "CapBnd", "Seccomp", "NoNewPrivs")},
        "unshare_user_errno": 0 if libc.unshare(CLONE_NEWUSER) == 0 else ctypes.get_errno(),
    }
    try:
        open("/proc/sys/kernel/hostname", "w").write("x")
        seen["proc_sys_write"] = "allowed"
    except OSError as error:
        seen["proc_sys_write"] = os.strerror(error.errno)
    os.write(report, (json.dumps(seen) + "\n").encode())
    os.close(report)
    time.sleep(hold_s)
    os._exit(0)


def memory_of(pid):
    """PSS and pages held alone (kB) of the session's PID 1 (the only child of the forked process)."""
    with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
        first = handle.read().split()[0]
    fields = {}
    with open("/proc/%s/smaps_rollup" % first) as handle:
        for line in handle:
            name, _, rest = line.partition(":")
            if name in ("Pss", "Private_Clean", "Private_Dirty"):
                fields[name] = int(rest.split()[0])
    return fields["Pss"], fields["Private_Clean"] + fields["Private_Dirty"]


def main():
    if os.geteuid() != 0:
        sys.exit("fork-probe: run as root (each session becomes a host uid of its own)")
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    filters = sorted(glob.glob(os.path.expanduser("~/.cache/sandcell/seccomp-*.bpf")), key=os.path.getmtime)
    if not filters:
        sys.exit("fork-probe: no compiled seccomp filter in ~/.cache/sandcell; run `npx sandcell doctor` first")
    with open(filters[-1], "rb") as handle:
        filter_bytes = handle.read()
    global pandas
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    import IPython
    import matplotlib
    import numpy
    import pandas

    matplotlib.use("agg")
    import matplotlib.pyplot

    del IPython, numpy  # imported for the sessions to share; pandas is used by name

    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = lambda usage: usage.ru_utime + usage.ru_stime  # noqa: E731
    print("zygote: imports took %.0f ms (%.0f ms of CPU)" % ((time.perf_counter() - started) * 1000, (cpu(after) - cpu(before)) * 1000))
    gc.freeze()
    hold_s = 2.0
    times, children = [], []
    for index in range(count):
        read_end, write_end = os.pipe()
        begun = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                session(FIRST_UID + index, filter_bytes, write_end, hold_s)
            except BaseException as error:  # noqa: BLE001 - said to the parent, then gone
                os.write(write_end, (json.dumps({"error": repr(error)}) + "\n").encode())
                os._exit(1)
        os.close(write_end)
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(read_end, 4096)
            if not chunk:
                break
            line += chunk
        os.close(read_end)
        times.append((time.perf_counter() - begun) * 1000)
        children.append(pid)
        seen = json.loads(line or b'{"error": "no answer"}')
        if "error" in seen:
            sys.exit("fork-probe: session %d failed: %s" % (index, seen["error"]))
        if index == 0:
            print("a session sees:", json.dumps(seen))
    memory = [memory_of(pid) for pid in children]
    for pid in children:
        os.waitpid(pid, 0)
    children_cpu = cpu(resource.getrusage(resource.RUSAGE_CHILDREN))
    times.sort()
    print("fork to `1 + 1` with pandas: p50 %.1f ms, slowest %.1f ms (%d sessions)" % (times[len(times) // 2], times[-1], count))
    print("CPU per session: %.1f ms" % (children_cpu * 1000 / count))
    print(
        "memory per session with %d alive: PSS %.1f MB, held alone %.1f MB"
        % (count, sum(pss for pss, _ in memory) / count / 1024, sum(alone for _, alone in memory) / count / 1024)
    )


if __name__ == "__main__":
    main()
