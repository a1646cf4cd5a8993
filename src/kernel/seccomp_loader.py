"""Loads a compiled seccomp filter (BPF) into this process and execs a program under it.

Usage:
  python3 seccomp_loader.py FILTER.bpf PROGRAM [ARGUMENT...]

For images sandcell did not build (an environment registered from an
existing image): they need not have python3-seccomp, so the filter
seccomp_filter.py compiles on the host is mounted in beside this file and
loaded with the standard library alone (ctypes and prctl). The filter is the
same one every other sandbox gets; it stacks on the engine's own profile.
"""

import ctypes
import os
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
INSTRUCTION_BYTES = 8  # struct sock_filter: u16 code, u8 jt, u8 jf, u32 k
MAX_INSTRUCTIONS = 4096  # BPF_MAXINSNS


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load(path):
    with open(path, "rb") as handle:
        program = handle.read()
    load_program(program, path)


def load_program(program, name="the filter"):
    """Loads a compiled filter (BPF instructions) on this thread and every child it makes."""
    path = name
    count = len(program) // INSTRUCTION_BYTES
    if count == 0 or count > MAX_INSTRUCTIONS or len(program) % INSTRUCTION_BYTES:
        raise OSError("%s is not a BPF program (%d bytes)" % (path, len(program)))
    struct.unpack_from("HBBI", program)  # a well-formed first instruction, or an error here
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(count, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: seccomp_loader.py FILTER.bpf PROGRAM [ARGUMENT...]\n")
        return 2
    try:
        load(sys.argv[1])
    except OSError as error:
        # Never run the supervisor without the filter.
        sys.stderr.write("sandcell: could not load the seccomp filter: %s\n" % error)
        return 70
    os.execv(sys.argv[2], sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
