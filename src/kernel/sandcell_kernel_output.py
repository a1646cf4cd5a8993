"""How the Python kernel's output reaches the host (sandcell_python_runner.py
sends it on the protocol's channel, sandcell_kernel_protocol.py): the stream
buffers behind sys.stdout / sys.stderr and the captured descriptors 1 and 2,
and the bounds a result's metadata and an error's parts are kept within before
they become protocol messages.
"""

import json
import os
import sys
import threading

STREAM_CHUNK_BYTES = 8192
TRACEBACK_NOTE_BYTES = 200


class StreamBuffer:
    """Collects one stream's text and sends it in chunks, so a loop of small
    prints costs a few messages rather than one per call."""

    def __init__(self, channel, budget, name):
        self.channel = channel
        self.budget = budget
        self.name = name
        self.parts = []
        self.size = 0
        self.lock = threading.Lock()
        self.execution_id = None

    def write(self, text):
        if not text:
            return
        with self.lock:
            self.parts.append(text)
            self.size += len(text)
            if self.size >= STREAM_CHUNK_BYTES:
                self._flush_locked()

    def flush(self):
        with self.lock:
            self._flush_locked()

    def _flush_locked(self):
        if not self.parts:
            return
        text = "".join(self.parts)
        self.parts = []
        self.size = 0
        text = self.budget.take_text(text)
        if text and self.execution_id is not None:
            self.channel.send({"type": "stream", "id": self.execution_id, "name": self.name, "text": text})


class TextStream:
    """What sys.stdout / sys.stderr become inside the kernel."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, buffer, fileno):
        self._buffer = buffer
        self._fileno = fileno

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self._buffer.write(text)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._buffer.flush()

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    def fileno(self):
        return self._fileno

    @property
    def closed(self):
        return False


class DescriptorCapture:
    """Reads one of the redirected descriptors (1 or 2) and forwards it.

    Bytes leave the pipe only under `lock`, and are forwarded before it is
    released: so under the lock, an empty pipe means that everything written
    to it so far has been forwarded (drained), and the execution's end need
    not send a marker down the pipe and wait for the reader to see it."""

    def __init__(self, fd, buffer, marker):
        import codecs

        self.read_fd = fd
        self.buffer = buffer
        self.marker = marker
        self.synced = threading.Event()
        self.lock = threading.Lock()
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.pending = b""
        os.set_blocking(fd, False)
        thread = threading.Thread(target=self._run, name="capture-%d" % fd, daemon=True)
        thread.start()

    def drained(self):
        """Whether everything written to the pipe so far has been forwarded."""
        import fcntl
        import termios

        with self.lock:
            if self.pending:
                return False
            count = bytearray(4)
            try:
                fcntl.ioctl(self.read_fd, termios.FIONREAD, count)
            except OSError:
                return False
            return int.from_bytes(count, sys.byteorder) == 0

    def _run(self):
        import select

        poller = select.poll()
        poller.register(self.read_fd, select.POLLIN)
        while True:
            try:
                poller.poll()
            except InterruptedError:
                continue
            with self.lock:
                try:
                    chunk = os.read(self.read_fd, 65536)
                except (BlockingIOError, InterruptedError):
                    continue
                if not chunk:
                    return
                self._take(chunk)

    def _take(self, chunk):
        data = self.pending + chunk
        self.pending = b""
        while True:
            index = data.find(self.marker)
            if index < 0:
                break
            self._forward(data[:index])
            data = data[index + len(self.marker) :]
            self.buffer.flush()
            self.synced.set()
        # Keep a possible partial marker for the next read.
        keep = 0
        for size in range(min(len(self.marker) - 1, len(data)), 0, -1):
            if self.marker.startswith(data[-size:]):
                keep = size
                break
        if keep:
            self.pending = data[-keep:]
            data = data[:-keep]
        self._forward(data)

    def _forward(self, data):
        if data:
            self.buffer.write(self.decoder.decode(data))


def bundle_size(bundle):
    """Roughly the bytes a MIME bundle takes on the wire, without serialising
    its (often large, base64) strings a second time."""
    return sum(len(value) if isinstance(value, str) else len(json.dumps(value, default=str)) for value in bundle.values())


def exceeds_json_size(value, limit):
    """Whether value's JSON surely takes more than limit bytes, judged without
    serialising it: every string counts its length, every other item one byte.
    A huge string in metadata is found at once instead of encoded first."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
            total += 1
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
            total += 1
        else:
            total += 1
        if total > limit:
            return True
    return False


def bounded_metadata(metadata, limit):
    """The metadata, or None when its JSON is over limit bytes or cannot be
    serialised (the result then goes out with empty metadata)."""
    if not metadata:
        return {}
    if not isinstance(metadata, dict) or exceeds_json_size(metadata, limit):
        return None
    try:
        size = len(json.dumps(metadata, ensure_ascii=True, default=str))
    except (TypeError, ValueError, RecursionError):
        return None
    return metadata if size <= limit else None


def utf8_size(text):
    return len(text.encode("utf-8", "surrogatepass"))


def cut_text(text, limit, what):
    """text within limit UTF-8 bytes, a note included when it had to be cut;
    returns (text, whether it was cut). Mirrors cutText on the host."""
    # A character takes at most 4 bytes, so a short text needs no measuring.
    if len(text) * 4 <= limit or (len(text) <= limit and utf8_size(text) <= limit):
        return text, False
    note = "\n[sandcell cut this %s: %d bytes, the first %%d kept; the limit follows the session option outputBytes]" % (what, utf8_size(text))
    room = max(0, limit - len(note) - 12)
    head = text[:room].encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return head + note % len(head.encode("utf-8", "surrogatepass")), True


def cut_traceback(entries, limit):
    """The traceback within limit bytes; returns (entries, whether it was cut).
    The last entry names the error (and repeats its value) and the innermost
    frames say where it happened, so entries are kept from the end: the last
    one cut to half the limit, then whole earlier ones while they fit.
    Mirrors cutTraceback on the host."""
    sizes = [utf8_size(entry) for entry in entries]
    if sum(sizes) <= limit or not entries:
        return entries, False
    last, _ = cut_text(entries[-1], limit // 2, "traceback line")
    kept = [last]
    room = limit - utf8_size(last) - TRACEBACK_NOTE_BYTES
    index = len(entries) - 2
    while index >= 0 and sizes[index] <= room:
        kept.append(entries[index])
        room -= sizes[index]
        index -= 1
    if index >= 0:
        kept.append("[sandcell cut %d earlier traceback entries: the traceback is kept within the session option outputBytes]" % (index + 1))
    kept.reverse()
    return kept, True
