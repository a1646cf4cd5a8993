"""Output the supervisor reads from a pipe (a command's stdout or stderr, or
an fd-3/4 kernel's descriptors 1 and 2) and sends as text: decoded as UTF-8
with invalid bytes replaced, within a byte budget, in chunks sent at least
every FLUSH_INTERVAL_S and as soon as STREAM_CHUNK_BYTES have gathered. The
byte budget (OutputBudget) is also the Python kernel's, for what its code
writes (sandcell_kernel.py).
"""

import codecs
import os
import select

FLUSH_INTERVAL_S = 0.05
STREAM_CHUNK_BYTES = 8192
READ_BYTES = 1 << 16


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exception):
        return False


class OutputBudget:
    """Bytes one execution (or one command stream) may send; the rest is
    dropped. The supervisor's budgets live on its one thread; the Python
    kernel's is shared by threads and is given a lock (threading is not
    imported here: it would cost every supervisor start a few milliseconds)."""

    def __init__(self, limit, lock=None):
        self.limit = limit
        self.used = 0
        self.truncated = False
        self.lock = _NoLock() if lock is None else lock

    def reset(self):
        with self.lock:
            self.used = 0
            self.truncated = False

    def take(self, size):
        """How many of `size` bytes may go out."""
        with self.lock:
            room = self.limit - self.used
            if size <= room:
                self.used += size
                return size
            self.truncated = True
            self.used = self.limit
            return max(0, room)

    def take_text(self, text):
        """The part of `text` that may go out: whole, or its head within what
        is left, never splitting a character."""
        data = text.encode("utf-8", "surrogatepass")
        allowed = self.take(len(data))
        return text if allowed == len(data) else data[:allowed].decode("utf-8", "ignore")


class OutputStream:
    """One pipe: read when it is readable or drained on demand; `send(name,
    text)` gets each chunk. `budget()` returns the budget to charge, or None
    when the output has nowhere to go and is dropped uncounted."""

    def __init__(self, loop, fd, name, budget, send, on_end=None):
        self.loop = loop
        self.on_end = on_end
        self.fd = fd
        self.name = name
        self.budget = budget
        self.send = send
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.parts = []
        self.size = 0
        self.timer = None
        self.open = True
        os.set_blocking(fd, False)
        loop.register(fd, select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR, self._on_readable)

    def _on_readable(self, mask):
        self._read(once=True)

    def drain(self):
        """Takes everything the pipe holds now, then sends it."""
        self._read(once=False)
        self.flush()

    def _read(self, once):
        while self.open:
            try:
                chunk = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                if self.on_end is not None:
                    self.on_end()
                return
            self._take(chunk)
            if once:
                return

    def _take(self, chunk):
        budget = self.budget()
        if budget is None:
            return
        allowed = budget.take(len(chunk))
        if allowed < len(chunk):
            chunk = chunk[:allowed]
        text = self.decoder.decode(chunk)
        if not text:
            return
        self.parts.append(text)
        self.size += len(text)
        if self.size >= STREAM_CHUNK_BYTES:
            self.flush()
        elif self.timer is None:
            self.timer = self.loop.call_later(FLUSH_INTERVAL_S, self._on_timer)

    def _on_timer(self):
        self.timer = None
        self.flush()

    def flush(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.parts:
            return
        text = "".join(self.parts)
        self.parts = []
        self.size = 0
        self.send(self.name, text)

    def finish(self):
        """Ends a segment (an execution, or the stream): a character cut at its
        end becomes U+FFFD rather than the start of the next segment's text."""
        tail = self.decoder.decode(b"", final=True)
        self.decoder.reset()
        if tail and self.budget() is not None:
            self.parts.append(tail)
        self.flush()

    def close(self):
        if not self.open:
            return
        self.open = False
        self.loop.unregister(self.fd)
        os.close(self.fd)

