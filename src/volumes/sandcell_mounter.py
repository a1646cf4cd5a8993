"""sandcell's volume mounter: the host's side of a volume mounted into a sandbox, run as root.

The host (src/volumes/volume-mounter.ts) starts one per server and asks it, a line of JSON each, to
stage a volume for one session: an idmapped bind mount of the volume's directory (or a directory
under it) at a host path the session's sandboxes then bind in as they bind /mnt/data. The files of
every volume belong on disk to one uid and gid (`fileUid`, `fileGid`); the mount shows them as the
session's own host uid and gid, so every session that mounts a volume reads and writes its files as
their owner, whichever uid it leased, and what it writes is the volume's on disk.

A sub-path is opened one name at a time, never following a symlink, so a link a sandbox planted in
the volume cannot send the mount anywhere else. Requests: `stage` and `unstage`; each answer is
`{"id": …, "ok": true}` or `{"id": …, "error": "…", "reason": "…"}`.
"""

import ctypes
import errno
import json
import os
import stat
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442
OPEN_TREE_CLONE = 1
AT_EMPTY_PATH = 0x1000
AT_FDCWD = -100
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
MOUNT_ATTR_IDMAP = 0x100000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
CLONE_NEWUSER = 0x10000000
# A sub-path is at most this many names deep (the host checks its shape first).
MAX_DEPTH = 64


class MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class Refused(Exception):
    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


def check(result, what):
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, "%s: %s" % (what, os.strerror(code)))
    return result


def open_below(root, sub_path):
    """An O_PATH descriptor of the directory `sub_path` names under `root`, met one name at a time."""
    flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(root, flags)
    names = [name for name in sub_path.split("/") if name]
    if len(names) > MAX_DEPTH:
        os.close(descriptor)
        raise Refused("invalid-path", "the sub-path is too deep")
    try:
        for name in names:
            if name in (".", ".."):
                raise Refused("invalid-path", "the sub-path may not hold . or ..")
            try:
                following = os.open(name, flags, dir_fd=descriptor)
            except FileNotFoundError:
                raise Refused("not-found", "%s is not in the volume" % sub_path)
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP):
                    raise Refused("not-a-directory", "%s is not a directory of the volume (a symlink is never followed)" % sub_path)
                raise
            os.close(descriptor)
            descriptor = following
        if not stat.S_ISDIR(os.fstat(descriptor).st_mode):
            raise Refused("not-a-directory", "%s is not a directory of the volume" % sub_path)
        return descriptor
    except BaseException:
        os.close(descriptor)
        raise


def user_namespace(file_uid, file_gid, uid, gid):
    """A descriptor of a new user namespace whose id `file_uid` is the host's `uid` (and the same for gids)."""
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(ready_read)
            os.close(done_write)
            check(libc.unshare(CLONE_NEWUSER), "unshare")
            os.write(ready_write, b"1")
            os.read(done_read, 1)
        finally:
            os._exit(0)
    os.close(ready_write)
    os.close(done_read)
    try:
        if os.read(ready_read, 1) != b"1":
            raise OSError(errno.EPERM, "could not make a user namespace for the mount")
        for name, text in (("uid_map", "%d %d 1" % (file_uid, uid)), ("gid_map", "%d %d 1" % (file_gid, gid))):
            with open("/proc/%d/%s" % (child, name), "w") as handle:
                handle.write(text)
        return os.open("/proc/%d/ns/user" % child, os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(ready_read)
        os.close(done_write)
        os.waitpid(child, 0)


def stage(request):
    source = open_below(request["source"], request.get("subPath", ""))
    tree = namespace = -1
    try:
        tree = check(libc.syscall(SYS_OPEN_TREE, source, b"", OPEN_TREE_CLONE | os.O_CLOEXEC | AT_EMPTY_PATH), "open_tree")
        attributes = MountAttr(MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (MOUNT_ATTR_RDONLY if request.get("readOnly") else 0), 0, MS_PRIVATE, 0)
        if request.get("uid") is not None:
            namespace = user_namespace(int(request["fileUid"]), int(request["fileGid"]), int(request["uid"]), int(request["gid"]))
            attributes.attr_set |= MOUNT_ATTR_IDMAP
            attributes.userns_fd = namespace
        check(libc.syscall(SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, ctypes.byref(attributes), ctypes.sizeof(attributes)), "mount_setattr")
        check(libc.syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, os.fsencode(request["target"]), MOVE_MOUNT_F_EMPTY_PATH), "move_mount")
    finally:
        for descriptor in (source, tree, namespace):
            if descriptor >= 0:
                os.close(descriptor)


def unstage(request):
    target = os.fsencode(request["target"])
    if libc.umount2(target, MNT_DETACH) < 0 and ctypes.get_errno() not in (errno.EINVAL, errno.ENOENT):
        check(-1, "umount")


def answer(reply):
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            answer({"id": None, "error": "not a JSON line", "reason": "internal"})
            continue
        try:
            {"stage": stage, "unstage": unstage}[request["op"]](request)
            answer({"id": request.get("id"), "ok": True})
        except Refused as refused:
            answer({"id": request.get("id"), "error": str(refused), "reason": refused.reason})
        except Exception as error:  # noqa: BLE001 - every failure is an answer, the mounter serves on
            answer({"id": request.get("id"), "error": str(error), "reason": "io"})


if __name__ == "__main__":
    main()
