"""Snapshots, the sandbox's side (docs/kernel-protocol.md, "Snapshots"): the
archive of what a snapshot keeps beside each context's state.

A snapshot is one tar stream of /mnt/data (which is also /home/user), the user
site (/tmp/.local, where `pip install --user` puts packages) and the state
directory, where each context's kernel wrote its state file when asked
(state-save, routed to it like any context request). The host reads the stream
in chunks (state-read) when saving and writes it back in chunks (state-write)
when loading, raw after each request's or reply's line (a frame); `tar` does
the work in a child, so the supervisor's loop only moves bytes and a large
archive never sits whole in its memory or in /tmp.
"""

import collections
import fcntl
import os
import re

from sandcell_event_loop import READABLE, WRITABLE
from sandcell_process import SpawnError, kill_group, spawn

STATE_DIR = "/tmp/.sandcell-state"
# Relative to /, in this order.
ARCHIVED = ("mnt/data", "tmp/.local", "tmp/.sandcell-state")
CHUNK_BYTES = 4 << 20
PIPE_NAME = re.compile(r"^context-[A-Za-z0-9_-]{1,64}\.pipe$")
MAX_QUEUED_WRITES = 2
ERROR_BYTES = 8192
# tar's pipe: larger than the default 64 KiB, so a chunk crosses in fewer rounds of the loop.
PIPE_BYTES = 1 << 20


class StateError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Archive:
    """One `tar` child: `tar -c` for a save (its output read by the host), or
    `tar -x` for a load (its input written by the host). Answers go through
    `reply(body, frame=None)` or `fail(StateError)` callbacks, once per request."""

    # A Pipe moves one context's state, with no tar.
    piped = False

    def __init__(self, loop, mode, tar, bash, env, clean):
        self._setup(loop, mode)
        self.tar, self.bash, self.env = tar, bash, env
        reset_state_directory()
        if mode == "load":
            argv = [tar, "--extract", "--file=-", "--directory=/", "--no-same-owner", "--preserve-permissions", "--no-overwrite-dir"]
            if clean:
                # A restore brings the files back as they were: what was made since goes first.
                argv = [bash, "-c", 'shopt -s dotglob nullglob; rm -rf --one-file-system -- /mnt/data/* /tmp/.local; exec "$@"', "sandcell-state", *argv]
            self._start(argv)

    def _setup(self, loop, mode):
        self.loop = loop
        self.mode = mode
        self.offset = 0
        self.pending = None  # the request waiting for bytes, or for tar's exit
        self.status = None
        self.errors = b""
        self.closed = False
        self.waiting = None  # called once tar has exited
        self.writes = collections.deque()  # a load's frames not yet in tar's pipe: (reply, fail, view, eof)
        self.out = self.into = None
        self.pid = self.errors_fd = None

    def _start(self, argv):
        """Starts tar: for a save once the contexts have written their state (the first read)."""
        in_read = out_write = None
        if self.mode == "save":
            self.out, out_write = os.pipe()
        else:
            in_read, self.into = os.pipe()
        errors_read, errors_write = os.pipe()
        child = [in_read, out_write, errors_write]
        try:
            self.pid = spawn(argv, "/", self.env, child)
        except SpawnError as error:
            for fd in (self.out, self.into, errors_read):
                if fd is not None:
                    os.close(fd)
            self.out = self.into = None
            raise StateError("state-failed", "tar could not start: %s" % error) from None
        finally:
            for fd in child:
                if fd is not None:
                    os.close(fd)
        self.errors_fd = errors_read
        os.set_blocking(errors_read, False)
        self.loop.register(errors_read, READABLE, self._on_errors)
        for fd in (self.out, self.into):
            if fd is not None:
                os.set_blocking(fd, False)
                try:
                    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
                except OSError:
                    pass  # over the system's bound for an unprivileged pipe: the default works
        self.loop.on_exit(self.pid, self._on_exit)

    # --- a save: the host reads -------------------------------------------------
    def read(self, offset, reply, fail):
        if self.mode != "save":
            raise StateError("invalid-request", "state-read: the archive is being loaded, not saved")
        if self.pending is not None:
            raise StateError("invalid-request", "state-read: a read is under way already")
        if offset != self.offset:
            raise StateError("invalid-request", "state-read: offset %r, but %d bytes were read so far" % (offset, self.offset))
        if self.pid is None and not self.piped:
            members = [member for member in ARCHIVED if os.path.lexists("/" + member)]
            self._start([self.tar, "--create", "--file=-", "--directory=/", "--one-file-system", "--numeric-owner", "--ignore-failed-read", "--warning=no-file-changed", "--warning=no-file-ignored", "--", *members])
        if self.out is None:
            raise StateError("invalid-request", "state-read: the archive has ended")
        # Read in place into the chunk (os.read would allocate its whole size for each pipe's worth).
        self.pending = (reply, fail, bytearray(CHUNK_BYTES), 0)
        self.loop.register(self.out, READABLE, self._on_readable)

    def _on_readable(self, mask):
        reply, fail, chunk, filled = self.pending
        try:
            count = os.readv(self.out, [memoryview(chunk)[filled:]])
        except BlockingIOError:
            return
        filled += count
        self.pending = (reply, fail, chunk, filled)
        if count and filled < CHUNK_BYTES:
            return
        self.loop.unregister(self.out)
        if count:
            self._answer_read(False)
            return
        os.close(self.out)
        self.out = None
        self._when_exited(lambda: self._answer_read(True))

    def _answer_read(self, eof):
        reply, fail, chunk, filled = self.pending
        self.pending = None
        if eof and self.status not in (0, 1):  # 1: a file changed as it was read, which a live session may do
            fail(StateError("state-failed", "tar failed (status %s): %s" % (self.status, self._error_text())))
            return
        self.offset += filled
        del chunk[filled:]
        reply({"bytes": filled, "eof": eof}, chunk)

    # --- a load: the host writes ------------------------------------------------
    def write(self, data, eof, reply, fail):
        """Queues a frame for tar; answered once it is in tar's pipe (with
        `eof`, once tar has unpacked everything). The host may send the next
        frame before that answer, so one is always waiting while tar works."""
        if self.mode != "load":
            raise StateError("invalid-request", "state-write: the archive is being saved, not loaded")
        if self.into is None or len(self.writes) >= MAX_QUEUED_WRITES or (self.writes and self.writes[-1][3]):
            raise StateError("invalid-request", "state-write: too many writes under way, or the archive has ended")
        self.writes.append((reply, fail, memoryview(data), eof))
        if len(self.writes) == 1:
            self._on_writable(0)

    def _on_writable(self, mask):
        while self.writes:
            reply, fail, view, eof = self.writes[0]
            try:
                while view:
                    view = view[os.write(self.into, view) :]
            except BlockingIOError:
                self.writes[0] = (reply, fail, view, eof)
                if self.into not in self.loop.handlers:
                    self.loop.register(self.into, WRITABLE, self._on_writable)
                return
            except OSError:
                view = None  # tar stopped reading: its status says why
            if view is None or eof:
                if self.into in self.loop.handlers:
                    self.loop.unregister(self.into)
                os.close(self.into)
                self.into = None
                # The last frame (or the one tar refused) is answered with tar's status; any behind it failed.
                self.pending = self.writes.popleft()[:2]
                self._fail_writes("tar stopped reading the archive")
                self._when_exited(self._answer_write)
                return
            self.writes.popleft()
            reply({})
        if self.into in self.loop.handlers:
            self.loop.unregister(self.into)

    def _answer_write(self):
        reply, fail = self.pending[:2]
        self.pending = None
        if self.status != 0:
            fail(StateError("state-failed", "the archive could not be unpacked (tar status %s): %s" % (self.status, self._error_text())))
            return
        reply({})

    # --- tar's end --------------------------------------------------------------
    def _on_errors(self, mask):
        try:
            data = os.read(self.errors_fd, 65536)
        except BlockingIOError:
            return
        if not data:
            self.loop.unregister(self.errors_fd)
            os.close(self.errors_fd)
            self.errors_fd = None
            return
        self.errors = (self.errors + data)[-ERROR_BYTES:]

    def _on_exit(self, status):
        self.status = os.waitstatus_to_exitcode(status)
        waiting, self.waiting = self.waiting, None
        if waiting is not None:
            waiting()

    def _when_exited(self, callback):
        if self.status is not None:
            callback()
        else:
            self.waiting = callback

    def _error_text(self):
        return self.errors.decode("utf-8", "replace").strip() or "no message"

    def close(self):
        """Ends tar and whatever waits on it (a new archive, state-end, the sandbox's end)."""
        if self.closed:
            return
        self.closed = True
        if self.pid is not None and self.status is None:
            kill_group(self.pid)
            self.loop.exit_callbacks.pop(self.pid, None)
        for fd in (self.out, self.into, self.errors_fd):
            if fd is not None:
                self.loop.unregister(fd)
                os.close(fd)
        self.out = self.into = self.errors_fd = None
        if self.pending is not None:
            fail = self.pending[1]
            self.pending = None
            fail(StateError("state-failed", "the archive was abandoned"))
        self._fail_writes("the archive was abandoned")

    def _fail_writes(self, why):
        writes, self.writes = self.writes, collections.deque()
        for _, fail, _, _ in writes:
            fail(StateError("state-failed", why))


class Pipe(Archive):
    """One context's state streamed through a FIFO in the state directory
    rather than kept as a file in the archive: a fork's. For a save the kernel
    writes it (state-save with `stream`) while the host reads it (state-read);
    for a load the host writes it (state-write) while the kernel reads it
    (state-load), so the source's dump, the transfer and the fork's load
    overlap. Made before the kernel is asked, after the archive of the files
    (which it replaces). A save's end is the kernel closing the pipe: its
    reader opens first, so the kernel's open waits for it, and (on Linux) no
    end is seen before a writer has come and gone. For a load the supervisor
    holds a reader of its own (never read) before it opens its writer, so
    neither open waits, and what it wrote stays in the pipe when its writer
    closes before the kernel has opened the pipe: a FIFO's bytes go when its
    last descriptor does. The kernel still sees the end once the writer has
    closed, since that reader is not a writer."""

    piped = True

    def __init__(self, loop, mode, name):
        if not isinstance(name, str) or PIPE_NAME.match(name) is None:
            raise StateError("invalid-request", "state-pipe: name must be context-ID.pipe")
        self._setup(loop, mode)
        self.status = 0  # no child to wait for: the pipe's end is the end
        self.path = os.path.join(STATE_DIR, name)
        self.keeper = None
        try:
            os.mkfifo(self.path, 0o600)
            if mode == "load":
                self.keeper = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            fd = os.open(self.path, (os.O_RDONLY if mode == "save" else os.O_WRONLY) | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as error:
            if self.keeper is not None:
                os.close(self.keeper)
                self.keeper = None
            raise StateError("state-failed", "the state pipe could not be made: %s" % error) from None
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass
        if mode == "save":
            self.out = fd
        else:
            self.into = fd

    def close(self):
        super().close()
        if self.keeper is not None:
            os.close(self.keeper)
            self.keeper = None


def reset_state_directory():
    """An empty state directory, only the sandbox's user's: what a previous snapshot left goes."""
    remove_state_directory()
    os.mkdir(STATE_DIR, 0o700)


def remove_state_directory():
    import shutil

    shutil.rmtree(STATE_DIR, ignore_errors=True)
