"""The kernel protocol (version 2, docs/kernel-protocol.md) as the Python
kernel (sandcell_kernel.py) and the bash kernel (sandcell_bash_kernel.py) both
speak it: every message is one line of ASCII JSON on a descriptor of the
kernel's own; a request is handled at once or waits its turn behind the
running execution, and is answered by a reply with its id.

The standard library alone: the Python kernel loads it by its path (its
load_sibling keeps sandcell's modules out of the user's imports), the bash
kernel imports it.
"""

import json
import os
import threading

PROTOCOL_VERSION = 2
# Requests answered in order, behind the running execution: on the Python
# kernel's main thread, from the bash kernel's queue.
QUEUED_REQUESTS = frozenset(("execute", "reset", "ping", "complete", "inspect", "state-save", "state-load"))


class Channel:
    """Sends protocol messages on the kernel's descriptor; thread-safe."""

    def __init__(self, fd):
        self._fd = fd
        self._lock = threading.Lock()
        self._held = None

    @staticmethod
    def encode(message):
        """The message as one protocol line; its length is what the host counts."""
        # ensure_ascii keeps the line valid UTF-8 whatever the user code printed.
        return (json.dumps(message, ensure_ascii=True, default=str) + "\n").encode("ascii")

    def send(self, message):
        self.write(self.encode(message))

    def hold(self, data):
        """Keeps a line to go out in front of the next one: a cell's result, which its end follows
        at once, so the two cross the supervisor and reach the host in one write, not two. The
        flusher sends it on its own if nothing follows (release_held)."""
        with self._lock:
            if self._held is not None:
                self._write_locked(self._held)
            self._held = data

    def release_held(self):
        with self._lock:
            if self._held is not None:
                held, self._held = self._held, None
                self._write_locked(held)

    def write(self, data):
        with self._lock:
            if self._held is not None:
                data, self._held = self._held + data, None
            self._write_locked(data)

    def _write_locked(self, data):
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]


def take_request(line, at_once, enqueue, channel):
    """One request line: a request whose type `at_once` maps to a handler is
    handled now, a queued one (QUEUED_REQUESTS) goes to `enqueue`; a line
    that is not a JSON object, or a type no kernel knows, is answered here."""
    try:
        request = json.loads(line)
        if not isinstance(request, dict):
            raise ValueError
    except ValueError:
        channel.send({"type": "protocol-error", "message": "invalid JSON request"})
        return
    kind = request.get("type")
    if kind in at_once:
        at_once[kind](request)
    elif kind in QUEUED_REQUESTS:
        enqueue(request)
    else:
        channel.send(failure(request, "unknown-request", "unknown request type %r" % kind))


def reply(request, ok=True, **body):
    message = {"type": "reply", "id": request.get("id"), "ok": ok}
    message.update(body)
    return message


def failure(request, code, message):
    return reply(request, ok=False, error={"code": code, "message": message})


def is_absolute_path(path):
    """Whether a state request's `path` may be opened: absolute, and no NUL in it."""
    return isinstance(path, str) and os.path.isabs(path) and "\x00" not in path


def ready(language, version, **details):
    """The first event a kernel sends, once it can take requests."""
    message = {"type": "ready", "protocolVersion": PROTOCOL_VERSION, "language": language, "version": version}
    message.update(details)
    message["pid"] = os.getpid()
    return message
