"""sandcell's seccomp filter, shared by every backend.

Usage:
  python3 seccomp_filter.py OUTPUT_PATH
      writes the filter as a BPF program (for `bwrap --seccomp FD`);
  python3 seccomp_filter.py --exec PROGRAM [ARGUMENT...]
      loads the filter into this process and execs PROGRAM under it. Used in
      containers, where it stacks on top of the engine's own profile: a call
      is allowed only when every filter allows it.

Everything is allowed except what a sandboxed interpreter has no business
doing: debugging other processes or setting their limits, mounting, new namespaces, kernel keyrings,
BPF, perf, io_uring, module and kexec loading, userfaultfd, personality
changes, terminal input injection, and sockets other than unix/inet/inet6.
Denied calls fail with EPERM (clone3 with ENOSYS, so that libc falls back to
clone, whose flags we can inspect). Foreign architectures are killed.
"""

import errno
import os
import sys

import seccomp

DENIED_SYSCALLS = [
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # mounts and the new mount API
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    # namespaces
    "unshare", "setns",
    # kernel keyrings
    "keyctl", "add_key", "request_key",
    # kernel attack surface
    "bpf", "perf_event_open", "userfaultfd", "personality",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "fanotify_init",
    "acct", "swapon", "swapoff", "reboot", "syslog", "quotactl", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "uselib",
]

# Namespace flags that clone() must not carry.
CLONE_NAMESPACE_FLAGS = [
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
]

TIOCSTI = 0x5412
TIOCLINUX = 0x541C

ALLOWED_SOCKET_FAMILIES = {1, 2, 10}  # AF_UNIX, AF_INET, AF_INET6
AF_MAX = 64  # generous upper bound of address families


def build():
    deny = seccomp.ERRNO(errno.EPERM)
    sandbox = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            sandbox.add_rule(deny, name)
        except (RuntimeError, ValueError):
            pass  # unknown on this architecture
    sandbox.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # Setting another process's limits (reading them is harmless): a CPU-time limit set on the
    # supervisor would have the kernel SIGKILL it, which no PID-namespace init is shielded from.
    sandbox.add_rule(deny, "prlimit64", seccomp.Arg(0, seccomp.NE, 0), seccomp.Arg(2, seccomp.NE, 0))
    for flag in CLONE_NAMESPACE_FLAGS:
        sandbox.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    # The kernel compares only the low 32 bits of an ioctl request.
    for request in (TIOCSTI, TIOCLINUX):
        sandbox.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    for call in ("socket", "socketpair"):
        for family in range(AF_MAX):
            if family not in ALLOWED_SOCKET_FAMILIES:
                sandbox.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), call, seccomp.Arg(0, seccomp.EQ, family))
        sandbox.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), call, seccomp.Arg(0, seccomp.GE, AF_MAX))
    return sandbox


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--exec":
        program = sys.argv[2]
        build().load()
        os.execv(program, sys.argv[2:])
    if len(sys.argv) != 2:
        sys.stderr.write("usage: seccomp_filter.py OUTPUT_PATH | --exec PROGRAM [ARGUMENT...]\n")
        return 2
    with open(sys.argv[1], "wb") as output:
        build().export_bpf(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
