"""The supervisor's single-threaded event loop, and the descriptor helpers it
drives: epoll over descriptors, timers, child exits (SIGCHLD through a wakeup
pipe), a line reader with a size bound, and a non-blocking writer.

One thread and no locks: every handler runs to completion before the next,
so the order in which events reach the host is the order handlers send them.
"""

import collections
import heapq
import os
import select
import signal
import time

READABLE = select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR
WRITABLE = select.EPOLLOUT | select.EPOLLERR
READ_BYTES = 1 << 16
FRAME_READ_BYTES = 1 << 20


class Timer:
    __slots__ = ("deadline", "callback", "cancelled")

    def __init__(self, deadline, callback):
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self):
        self.cancelled = True

    def __lt__(self, other):
        return self.deadline < other.deadline


class EventLoop:
    def __init__(self):
        # Called with the exception when a handler fails: one bad event must
        # not end every context and command of the sandbox.
        self.on_error = None
        # Called after each round of handlers (the supervisor sends what they queued).
        self.after_round = None
        self.epoll = select.epoll()
        self.handlers = {}
        self.timers = []
        self.exit_callbacks = {}
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        self.wake_read = wake_read
        # A Python-level handler makes the C handler write to the wakeup pipe,
        # which wakes epoll; the children are reaped in the loop, not in it.
        # SIGCHLD is the supervisor's one handled signal, so the code can send
        # it to PID 1 at will: a full pipe already wakes the loop, quietly.
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _ignore_signal)
        self.register(wake_read, select.EPOLLIN, self._reap_children)

    def register(self, fd, mask, handler):
        self.handlers[fd] = handler
        self.epoll.register(fd, mask)

    def modify(self, fd, mask):
        self.epoll.modify(fd, mask)

    def unregister(self, fd):
        if self.handlers.pop(fd, None) is not None:
            try:
                self.epoll.unregister(fd)
            except (OSError, ValueError):
                pass

    def call_later(self, seconds, callback):
        timer = Timer(time.monotonic() + seconds, callback)
        heapq.heappush(self.timers, timer)
        return timer

    def on_exit(self, pid, callback):
        """callback(status) once the child pid has ended and been reaped."""
        self.exit_callbacks[pid] = callback

    def run(self):
        # A child that ended before SIGCHLD was handled woke no one.
        self._reap_children(0)
        while True:
            timeout = -1
            while self.timers and self.timers[0].cancelled:
                heapq.heappop(self.timers)
            if self.timers:
                timeout = max(0.0, self.timers[0].deadline - time.monotonic())
            for fd, mask in self.epoll.poll(timeout):
                handler = self.handlers.get(fd)
                if handler is not None:
                    self._call(handler, mask)
            now = time.monotonic()
            while self.timers and (self.timers[0].cancelled or self.timers[0].deadline <= now):
                timer = heapq.heappop(self.timers)
                if not timer.cancelled:
                    self._call(timer.callback)
            if self.after_round is not None:
                self.after_round()

    def _call(self, callback, *arguments):
        try:
            callback(*arguments)
        except Exception as error:
            if self.on_error is None:
                raise
            self.on_error(error)

    def _reap_children(self, mask):
        try:
            while os.read(self.wake_read, 4096):
                pass
        except BlockingIOError:
            pass
        for pid, status in ended_children():
            callback = self.exit_callbacks.pop(pid, None)
            if callback is not None:
                callback(status)


def _ignore_signal(number, frame):
    pass


def ended_children():
    """Reaps every child that has ended, now, without waiting: (pid, wait status) pairs."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def exit_status(status):
    """(code, signal name) of a wait status: one of them is None."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return None, signal.Signals(number).name
        except ValueError:
            return None, "SIG%d" % number
    return os.waitstatus_to_exitcode(status), None


class LineReader:
    """Newline-delimited lines from a non-blocking descriptor. A line longer
    than `limit` bytes is skipped whole (never held in memory) and reported.
    A line may announce raw bytes after it (a frame): its handler calls
    `expect_bytes`, and those bytes are given whole, never read as lines."""

    def __init__(self, fd, limit, on_line, on_oversize):
        self.fd = fd
        self.limit = limit
        self.on_line = on_line
        self.on_oversize = on_oversize
        self.parts = []
        self.size = 0
        self.skipping = False
        self.closed = False
        self.frame = None  # [bytes still to come, parts, on_bytes]

    def expect_bytes(self, count, on_bytes, keep=True):
        """Takes the next `count` bytes, after the line being handled, as one
        bytearray given to on_bytes (the caller bounds `count`), read straight
        into it; without `keep`, they are passed over unkept and on_bytes gets
        b""."""
        if count == 0:
            on_bytes(b"")
        else:
            self.frame = [count, bytearray(count) if keep else None, on_bytes]

    def _take_frame(self, chunk, start):
        frame = self.frame
        end = min(len(chunk), start + frame[0])
        if frame[1] is not None:
            filled = len(frame[1]) - frame[0]
            frame[1][filled : filled + end - start] = memoryview(chunk)[start:end]
        self._took(end - start)
        return end

    def _took(self, count):
        frame = self.frame
        frame[0] -= count
        if frame[0] == 0:
            self.frame = None
            frame[2](b"" if frame[1] is None else frame[1])

    def read_once(self):
        """Reads what is there; returns False at end of file."""
        frame = self.frame
        if frame is not None and frame[1] is not None:
            # A frame's bytes go straight into its buffer, up to its end.
            try:
                count = os.readv(self.fd, [memoryview(frame[1])[len(frame[1]) - frame[0] :]])
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not count:
                return False
            self._took(count)
            return True
        try:
            # A frame is read in larger pieces, up to its end.
            chunk = os.read(self.fd, READ_BYTES if self.frame is None else max(READ_BYTES, min(self.frame[0], FRAME_READ_BYTES)))
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        self._feed(chunk)
        return True

    def drain(self):
        """Reads until the pipe is empty; returns False at end of file."""
        while not self.closed:
            try:
                chunk = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self._feed(chunk)
        return False

    def _feed(self, chunk):
        start = 0
        while not self.closed:
            if self.frame is not None:
                start = self._take_frame(chunk, start)
                if start >= len(chunk):
                    return
                continue
            index = chunk.find(b"\n", start)
            end = len(chunk) if index < 0 else index
            if not self.skipping:
                if self.size + end - start > self.limit:
                    self.skipping = True
                    self.parts = []
                    self.size = 0
                    self.on_oversize()
                elif end > start:
                    self.parts.append(chunk[start:end])
                    self.size += end - start
            if index < 0:
                return
            start = index + 1
            if self.skipping:
                self.skipping = False
                continue
            parts = self.parts
            self.parts = []
            self.size = 0
            if parts:
                self.on_line(parts[0] if len(parts) == 1 else b"".join(parts))


class Outbox:
    """Writes to a non-blocking descriptor without ever waiting on it: what the
    reader has not taken yet waits here, so a busy kernel or command cannot
    stall the supervisor. Writing to a closed reader drops the data."""

    def __init__(self, loop, fd):
        self.loop = loop
        self.fd = fd
        self.queue = collections.deque()
        self.closing = False
        self.closed = False
        os.set_blocking(fd, False)

    def write(self, data):
        if self.closed or self.closing or not data:
            return
        if self.queue:
            self.queue.append(memoryview(data))
            return
        view = memoryview(data)
        try:
            view = view[os.write(self.fd, view) :]
        except BlockingIOError:
            pass
        except OSError:
            self.close()
            return
        if view:
            self.queue.append(view)
            self.loop.register(self.fd, WRITABLE, self._on_writable)

    def _on_writable(self, mask):
        try:
            while self.queue:
                view = self.queue[0]
                written = os.write(self.fd, view)
                if written < len(view):
                    self.queue[0] = view[written:]
                    return
                self.queue.popleft()
        except BlockingIOError:
            return
        except OSError:
            self.close()
            return
        self.loop.unregister(self.fd)
        if self.closing:
            self.close()

    def close_when_written(self):
        self.closing = True
        if not self.queue:
            self.close()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.queue.clear()
        self.loop.unregister(self.fd)
        os.close(self.fd)


# writev takes at most IOV_MAX (1024 on Linux) buffers at once.
WRITE_BUFFERS = 512


def write_all(fd, buffers):
    """Writes every buffer to a (normally blocking) descriptor, in order."""
    views = collections.deque(memoryview(buffer) for buffer in buffers if len(buffer))
    while views:
        try:
            written = os.writev(fd, list(views)[:WRITE_BUFFERS] if len(views) > WRITE_BUFFERS else views)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        while written:
            if written >= len(views[0]):
                written -= len(views[0])
                views.popleft()
            else:
                views[0] = views[0][written:]
                written = 0
