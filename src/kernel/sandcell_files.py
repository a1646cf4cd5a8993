"""The file requests (file-read, file-chunk, file-write, file-write-chunk,
file-list, file-remove), which the supervisor answers itself, so files work whatever a
kernel is doing. Every path stays inside /mnt/data (a relative path, or one
under /mnt/data/), or inside the sandbox's scratch /tmp (a path under /tmp/,
which the host names as such); symbolic links, hard links, FIFOs and sockets
are refused rather than followed or opened.
"""

import base64
import errno
import os
import stat

DATA_DIR = "/mnt/data"
SCRATCH_DIR = "/tmp"
# Set by the supervisor from the kernel options (fileTransferBytes).
FILE_LIMIT = 64 << 20
LIST_LIMIT = 10000
# The most raw bytes one reply's frame carries: the host's FRAME_MAX_BYTES.
FRAME_BYTES = 4 << 20


class FileError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _resolve(path):
    """Maps a path to an absolute one under /mnt/data (or /tmp, for a path
    under /tmp/), refusing escapes. Symlinks are refused in every component.
    Returns the path, its components below the base, and the base."""
    if not isinstance(path, str) or "\x00" in path:
        raise FileError("invalid-path", "path must be a string without NUL bytes")
    base = DATA_DIR
    if path.startswith("/mnt/data/"):
        path = path[len("/mnt/data/") :]
    elif path == SCRATCH_DIR or path.startswith(SCRATCH_DIR + "/"):
        base = SCRATCH_DIR
        path = path[len(SCRATCH_DIR) :].lstrip("/")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if path.startswith("/") or ".." in parts:
        raise FileError("invalid-path", "path must stay inside %s: %r" % (base, path))
    current = base
    for part in parts[:-1]:
        current = current + "/" + part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return base + "/" + "/".join(parts), parts, base
        if stat.S_ISLNK(info.st_mode):
            raise FileError("symlink", "refusing to follow a symbolic link: %s" % current)
        if not stat.S_ISDIR(info.st_mode):
            raise FileError("not-a-directory", "%s is not a directory" % current)
    return base + ("/" + "/".join(parts) if parts else ""), parts, base


def _os_file_error(full, error):
    """A FileError the host can map to a client error, for a failed open or mkdir."""
    if error.errno == errno.ENOENT:
        return FileError("not-found", "no such file: %s" % full)
    if error.errno == errno.ELOOP:  # the last component is a symlink (O_NOFOLLOW)
        return FileError("symlink", "refusing to follow a symbolic link: %s" % full)
    if error.errno == errno.EISDIR:
        return FileError("is-a-directory", "%s is a directory" % full)
    if error.errno == errno.ENOTDIR:
        return FileError("not-a-directory", "a parent of %s is not a directory" % full)
    if error.errno == errno.ENXIO:  # a FIFO nobody reads, or a socket: O_NONBLOCK makes open refuse at once
        return FileError("not-a-file", "%s is a FIFO or a socket, not a regular file" % full)
    if error.errno == errno.ENAMETOOLONG:
        return FileError("name-too-long", "%s: the name is too long for the file system" % full)
    if error.errno in (errno.EACCES, errno.EPERM):
        return FileError("permission-denied", "%s: permission denied (the code may have changed its mode)" % full)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        if full == SCRATCH_DIR or full.startswith(SCRATCH_DIR + "/"):
            return FileError("no-space", "%s: no space left in /tmp (the session's limits.tmpBytes)" % full)
        return FileError("no-space", "%s: no space left in /mnt/data (the session's limits.dataBytes)" % full)
    return FileError("io", "%s: %s" % (full, error.strerror))


def _open_regular(full, flags, mode=0o644):
    # O_NONBLOCK: opening a FIFO must never wait for its other end (the control
    # thread would hang); the fstat below then refuses anything not regular.
    try:
        fd = os.open(full, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as error:
        raise _os_file_error(full, error)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise FileError("not-a-file", "%s is not a regular file" % full)
    if info.st_nlink > 1:
        os.close(fd)
        raise FileError("hard-link", "refusing a file with several hard links: %s" % full)
    return fd, info


def file_read(message):
    full, parts, base = _resolve(message.get("path", ""))
    if not parts:
        raise FileError("is-a-directory", "%s is a directory" % base)
    fd, info = _open_regular(full, os.O_RDONLY)
    try:
        if info.st_size > FILE_LIMIT:
            raise FileError("too-large", "%s is %d bytes; the transfer limit is %d" % (full, info.st_size, FILE_LIMIT))
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > FILE_LIMIT:
                raise FileError("too-large", "%s grew past the transfer limit of %d bytes" % (full, FILE_LIMIT))
            chunks.append(chunk)
    finally:
        os.close(fd)
    return {"data": base64.b64encode(b"".join(chunks)).decode("ascii")}


def file_chunk(message):
    """Up to `bytes` of a file from `offset`, sent raw after the reply's line
    (a frame): how the host reads a file of any size with bounded memory on
    both sides, so FILE_LIMIT does not apply. Returns the body and the frame."""
    offset = message.get("offset")
    count = message.get("bytes")
    if not _is_integer(offset) or offset < 0 or not _is_integer(count) or not 0 <= count <= FRAME_BYTES:
        raise FileError("invalid-request", "file-chunk: offset must be an integer >= 0, bytes an integer from 0 to %d" % FRAME_BYTES)
    full, parts, base = _resolve(message.get("path", ""))
    if not parts:
        raise FileError("is-a-directory", "%s is a directory" % base)
    fd, before = _open_regular(full, os.O_RDONLY)
    try:
        # An offset at or past the end reads nothing (and a huge one never reaches pread's off_t).
        data = os.pread(fd, count, offset) if count and offset < before.st_size else b""
        after = os.fstat(fd)
    finally:
        os.close(fd)
    # The host compares size and mtime between chunks; within one, they must
    # not move either, or the bytes read belong to neither.
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise FileError("changed", "%s changed while it was read; read it again once nothing writes to it" % full)
    body = {"bytes": len(data), "size": after.st_size, "modifiedNs": after.st_mtime_ns, "eof": offset + len(data) >= after.st_size}
    return body, data


def _is_integer(value):
    return type(value) is int  # not a bool, not a float


def _make_parents(base, parts):
    current = base
    for part in parts[:-1]:
        current = current + "/" + part
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            if os.path.islink(current) or not os.path.isdir(current):
                raise FileError("not-a-directory", "%s is not a directory" % current)
        except OSError as error:
            raise _os_file_error(current, error)


def _write_at(fd, full, data, offset):
    try:
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, offset)
            view = view[written:]
            offset += written
    except OSError as error:
        raise _os_file_error(full, error)


def file_write(message):
    full, parts, base = _resolve(message.get("path", ""))
    if not parts:
        raise FileError("is-a-directory", "%s is a directory" % base)
    data = base64.b64decode(message.get("data", ""), validate=True)
    _make_parents(base, parts)
    fd, _ = _open_regular(full, os.O_WRONLY | os.O_CREAT)
    try:
        os.ftruncate(fd, 0)
        _write_at(fd, full, data, 0)
    finally:
        os.close(fd)
    return {"size": len(data)}


def file_write_chunk(message):
    """A piece of a file the host writes in order, raw in the frame after the
    request's line (`data`, set by the channel): offset 0 makes the file (and
    its parents) anew, each later piece must start where the file ends, so a
    file of any size comes in with bounded memory on both sides and two
    writers of one path cannot interleave unnoticed."""
    offset = message.get("offset")
    data = message.get("data")
    if not _is_integer(offset) or offset < 0 or not isinstance(data, (bytes, bytearray)):
        raise FileError("invalid-request", "file-write-chunk: offset must be an integer >= 0, and bytes the length of the frame after the line, at most %d" % FRAME_BYTES)
    full, parts, base = _resolve(message.get("path", ""))
    if not parts:
        raise FileError("is-a-directory", "%s is a directory" % base)
    if offset == 0:
        _make_parents(base, parts)
        fd, _ = _open_regular(full, os.O_WRONLY | os.O_CREAT)
    else:
        fd, info = _open_regular(full, os.O_WRONLY)
        if info.st_size != offset:
            os.close(fd)
            raise FileError("changed", "%s is %d bytes, not the %d written so far: something else wrote to it; write it again" % (full, info.st_size, offset))
    try:
        if offset == 0:
            os.ftruncate(fd, 0)
        _write_at(fd, full, data, offset)
    finally:
        os.close(fd)
    return {"size": offset + len(data)}


def file_list(message):
    full, parts, base = _resolve(message.get("path", ""))
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        raise FileError("not-found", "no such directory: %s" % full)
    if stat.S_ISLNK(info.st_mode):
        raise FileError("symlink", "refusing to follow a symbolic link: %s" % full)
    if not stat.S_ISDIR(info.st_mode):
        raise FileError("not-a-directory", "%s is not a directory" % full)
    entries = []
    recursive = bool(message.get("recursive", False))
    # Entries are named as the request named their base: relative for /mnt/data, absolute for /tmp.
    prefix = "/".join(([base] if base == SCRATCH_DIR else []) + parts)

    def walk(directory, relative):
        with os.scandir(directory) as iterator:
            for entry in sorted(iterator, key=lambda item: item.name):
                item = entry.stat(follow_symlinks=False)
                name = relative + "/" + entry.name if relative else entry.name
                if stat.S_ISLNK(item.st_mode):
                    kind = "symlink"
                elif stat.S_ISDIR(item.st_mode):
                    kind = "directory"
                elif stat.S_ISREG(item.st_mode):
                    kind = "file"
                else:
                    kind = "other"
                entries.append({"path": name, "type": kind, "size": item.st_size, "modifiedMs": int(item.st_mtime * 1000)})
                if recursive and kind == "directory" and len(entries) < LIST_LIMIT:
                    walk(entry.path, name)

    walk(full, prefix)
    return {"entries": entries}


def file_remove(message):
    full, parts, base = _resolve(message.get("path", ""))
    if not parts:
        raise FileError("invalid-path", "refusing to remove %s itself" % base)
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        raise FileError("not-found", "no such file: %s" % full)
    if stat.S_ISDIR(info.st_mode):
        import shutil

        shutil.rmtree(full)
    else:
        os.unlink(full)
    return {}



HANDLERS = {
    "file-read": file_read,
    "file-chunk": file_chunk,
    "file-write": file_write,
    "file-write-chunk": file_write_chunk,
    "file-list": file_list,
    "file-remove": file_remove,
}


def reply(message):
    """The reply to a file request, as a protocol message, and the raw bytes
    (a frame, empty for most requests) its `bytes` announces after it."""
    request_id = message.get("id")
    try:
        answer = HANDLERS[message.get("type")](message)
        body, frame = answer if isinstance(answer, tuple) else (answer, b"")
        return dict({"type": "reply", "id": request_id, "ok": True}, **body), frame
    except FileError as error:
        failure = {"code": error.code, "message": str(error)}
    except (ValueError, TypeError) as error:  # bad base64, a path of the wrong type
        failure = {"code": "invalid-request", "message": "%s: %s" % (type(error).__name__, error)}
    except OSError as error:
        failure = {"code": _os_file_error(error.filename or "/mnt/data", error).code, "message": str(error)}
    except Exception as error:  # never let a bad request end the supervisor
        failure = {"code": "internal", "message": "%s: %s" % (type(error).__name__, error)}
    return {"type": "reply", "id": request_id, "ok": False, "error": failure}, b""
