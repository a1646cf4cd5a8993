"""Contexts: one stateful kernel each, started and watched by the supervisor.

A kernel speaks the protocol in one of two ways (docs/kernel-protocol.md):
- 'stdio' (Python): requests on its stdin, events on its stdout; it captures
  its own descriptors 1 and 2.
- 'fd34' (every other language): requests on fd 3, events on fd 4; its fds 1
  and 2 are pipes read here and sent as `stream` events of the execution that
  is running, drained before each of its events so that order is kept.

Each event is forwarded with `"context": ID` spliced in as its last key, so a
kernel cannot speak for another context (in JSON the last key wins) and a
large result is never decoded and encoded again.
"""

import collections
import json
import os
import signal

from sandcell_event_loop import READABLE, LineReader, Outbox, exit_status
from sandcell_output import OutputBudget, OutputStream
from sandcell_process import SpawnError, kill_group, spawn_kernel

# An interrupt is sent again this often, this many times, while its execution still runs.
INTERRUPT_REPEAT_S = 0.3
INTERRUPT_REPEATS = 3

# Lines up to this size are parsed (cheap), so the supervisor knows each one
# is a JSON object and sees its type; longer ones (results, displays) are
# only checked to be one `{…}` line, which the splice keeps safe: any text
# that turns it into valid JSON leaves our key last, at the top level.
PARSE_BYTES = 1 << 18
STARTUP_ERROR_BYTES = 8192


class Context:
    def __init__(self, supervisor, context_id, language, kernel, cwd, env):
        self.supervisor = supervisor
        self.loop = supervisor.loop
        self.id = context_id
        self.language = language
        self.argv, self.mode = kernel
        self.cwd = cwd
        self.env = env
        self.suffix = b',"context":' + json.dumps(context_id).encode("ascii") + b"}\n"
        self.state = "exited"
        self.pid = None
        self.version = None
        # Called with (ok, body) once the kernel is ready or failed to start.
        self.on_start = None
        # Called once a kernel that was asked to stop has been reaped.
        self.on_gone = []
        # Each start is a generation: the exit of a kernel replaced by a
        # restart must not be taken for the death of its successor.
        self.generation = 0
        self.executions = collections.deque()
        self.budget = OutputBudget(supervisor.output_limit)
        self.lines_dropped = False
        self.startup_errors = ""
        self.events = None
        self.requests = None
        self.streams = []

    # --- life -------------------------------------------------------------
    def start(self, on_start, process=None):
        """Starts the kernel (or takes `process`, one started already);
        on_start(ok, body) once it is ready or has failed."""
        self.generation += 1
        self.on_start = on_start
        self.state = "starting"
        self.executions.clear()
        self.startup_errors = ""
        self.startup_budget = OutputBudget(1 << 20)
        if process is None:
            try:
                process = spawn_kernel(self.argv, self.mode, self.cwd, self.env)
            except SpawnError as error:
                self.state = "exited"
                on_start(False, {"code": "context-start-failed", "message": "the %s kernel could not start: %s" % (self.language, error)})
                return
        self.pid = process.pid
        self.requests = Outbox(self.loop, process.requests)
        os.set_blocking(process.events, False)
        self.events = LineReader(process.events, self.supervisor.kernel_line_limit, self._on_line, self._on_oversize)
        self.loop.register(process.events, READABLE, self._on_events_readable)
        self.streams = []
        if process.output is not None:
            self.streams.append(OutputStream(self.loop, process.output, "stdout", self._stream_budget, self._send_stream))
        self.streams.append(OutputStream(self.loop, process.errors, "stderr", self._stream_budget, self._send_stream))
        pid, generation = self.pid, self.generation
        self.loop.on_exit(pid, lambda status: self._on_exit(pid, generation, status))

    def kill(self, on_gone):
        """Kills the kernel's process group; on_gone() once it is reaped."""
        if self.state == "exited":
            on_gone()
            return
        self.on_gone.append(on_gone)
        if self.state != "stopping":
            self._abandon_start("the context was removed")
            self.state = "stopping"
            self._close_channels()
            kill_group(self.pid)

    def restart(self, on_start):
        """Kills the kernel's process group and starts a new kernel at once
        (the old one's exit, whenever it is reaped, is then ignored)."""
        if self.state in ("starting", "ready"):
            self._abandon_start("the context was restarted")
            self._close_channels()
            kill_group(self.pid)
        self.start(on_start)

    def _abandon_start(self, reason):
        if self.state == "starting" and self.on_start is not None:
            on_start, self.on_start = self.on_start, None
            on_start(False, {"code": "context-start-failed", "message": "the %s kernel did not get ready: %s" % (self.language, reason)})

    def _on_exit(self, pid, generation, status):
        kill_group(pid)  # whatever the kernel left in its group
        if generation != self.generation:
            return
        code, signal_name = exit_status(status)
        if self.state == "stopping":
            self.state = "exited"
            on_gone, self.on_gone = self.on_gone, []
            for callback in on_gone:
                callback()
            return
        # What it wrote before it died is in the pipes: send that first.
        self.events.drain()
        for stream in self.streams:
            stream.drain()
        self._close_channels()
        was = self.state
        self.state = "exited"
        self.executions.clear()
        if was == "starting":
            how = "exit code %s" % code if signal_name is None else signal_name
            message = "the %s kernel exited before it was ready (%s)" % (self.language, how)
            if self.startup_errors.strip():
                message += ": " + self.startup_errors.strip()
            on_start, self.on_start = self.on_start, None
            on_start(False, {"code": "context-start-failed", "message": message, "exitCode": code, "signal": signal_name})
            return
        self.supervisor.context_exited(self, code, signal_name)

    def _close_channels(self):
        if self.events is not None:
            self.events.closed = True
            self.loop.unregister(self.events.fd)
            os.close(self.events.fd)
            self.events = None
        if self.requests is not None:
            self.requests.close()
        for stream in self.streams:
            stream.flush()
            stream.close()
        self.streams = []
        self.executions.clear()

    # --- requests ---------------------------------------------------------
    def send(self, kind, message, line):
        """Forwards a host request (its line, as the host wrote it)."""
        if kind == "execute":
            self.executions.append(message.get("id"))
            if len(self.executions) == 1:
                self._begin_execution()
        elif kind == "interrupt" and self.mode != "stdio":
            current = self.executions[0] if self.executions else None
            if current is not None and message.get("id", current) == current:
                self._interrupt(current, INTERRUPT_REPEATS)
            return
        self.requests.write(line + b"\n")

    def _interrupt(self, execution_id, repeats):
        """SIGINT to the kernel's group, again a few times while the same execution runs: a signal
        that lands while a kernel is between states (bash forking, node entering or leaving a guarded
        stretch) can be lost, and one more is cheaper than the restart the host falls back on."""
        if self.pid is None or not self.executions or self.executions[0] != execution_id:
            return
        kill_group(self.pid, signal.SIGINT)
        if repeats > 0:
            self.loop.call_later(INTERRUPT_REPEAT_S, lambda: self._interrupt(execution_id, repeats - 1))

    def _begin_execution(self):
        self.budget.reset()
        self.lines_dropped = False

    # --- events -------------------------------------------------------------
    def _on_events_readable(self, mask):
        if not self.events.read_once():
            # The kernel closed its event channel: its exit follows.
            self.loop.unregister(self.events.fd)

    def _on_line(self, line):
        for stream in self.streams:
            stream.drain()
        message = None
        if len(line) <= PARSE_BYTES:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict) or not message:
                return self._bad_line(line)
        elif not _looks_like_object(line):
            return self._bad_line(line)
        kind = message.get("type") if message is not None else None
        if self.state == "starting":
            if kind == "ready":
                return self._ready(message)
            if kind != "log":
                return self.supervisor.log("the %s kernel of context %s sent %r before it was ready; dropped" % (self.language, self.id, kind))
        elif kind == "ready":
            return
        suffix = self.suffix
        if kind == "execution-end":
            for stream in self.streams:
                stream.finish()
            if self.budget.truncated or self.lines_dropped:
                suffix = b',"outputTruncated":true' + suffix
            if self.executions and self.executions[0] == message.get("id"):
                self.executions.popleft()
                if self.executions:
                    self._begin_execution()
        self.supervisor.send_parts(memoryview(line)[: line.rindex(b"}")], suffix)

    def _ready(self, message):
        self.state = "ready"
        version = message.get("version", message.get("python"))
        self.version = version if isinstance(version, str) else None
        on_start, self.on_start = self.on_start, None
        on_start(True, {"pid": self.pid, "language": self.language, "version": self.version})

    def _bad_line(self, line):
        self.supervisor.kernel_line_refused(self, line)

    def _on_oversize(self):
        self.lines_dropped = True
        self.supervisor.log("context %s: a line from its kernel was over %d bytes and was dropped" % (self.id, self.supervisor.kernel_line_limit))

    def _stream_budget(self):
        if self.state == "starting":
            return self.startup_budget  # diagnostics of a start, not an execution's output
        if self.executions and self.state == "ready":
            return self.budget
        return None

    def _send_stream(self, name, text):
        if self.state == "starting" or not self.executions:
            self.startup_errors = (self.startup_errors + text)[-STARTUP_ERROR_BYTES:]
            if self.state != "starting":
                self.supervisor.log("context %s wrote to %s outside an execution: %s" % (self.id, name, text[:1000]))
            return
        message = {"type": "stream", "id": self.executions[0], "name": name, "text": text, "context": self.id}
        self.supervisor.send(message)


def _looks_like_object(line):
    """A long line that starts with `{` and ends with a `}` that is not the
    first one's partner in `{ }` (splicing `,"context"` there breaks it)."""
    line = line.rstrip(b" \t\r")
    if not (line.startswith(b"{") and line.endswith(b"}")):
        return False
    return line[:-1].rstrip(b" \t\r\n")[-1:] != b"{"

