"""Commands: `bash -c COMMAND` processes the host starts in the sandbox, each
in its own session and process group, with their output streamed back as
`command-output` and a `command-end` once the process has exited and its
pipes are drained (or END_GRACE_S after its exit, when a background
grandchild still holds them open).
"""

import os
import signal
import time

from sandcell_event_loop import Outbox, exit_status
from sandcell_output import OutputBudget, OutputStream
from sandcell_process import SpawnError, kill_group, spawn

END_GRACE_S = 0.1
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL, "SIGHUP": signal.SIGHUP, "SIGQUIT": signal.SIGQUIT}


class Command:
    def __init__(self, supervisor, command_id, command, cwd, env, with_stdin):
        self.supervisor = supervisor
        self.loop = supervisor.loop
        self.id = command_id
        self.command = command
        self.cwd = cwd
        self.env = env
        self.with_stdin = with_stdin
        self.pid = None
        self.started_ms = int(time.time() * 1000)
        self.status = None
        self.ended = False
        self.grace = None
        self.stdin = None
        self.streams = []

    def start(self):
        """Starts the process; returns an error {code, message} or None."""
        stdin_read = stdin_write = None
        if self.with_stdin:
            stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        child = [stdin_read, stdout_write, stderr_write]
        try:
            self.pid = spawn([self.supervisor.bash, "-c", self.command], self.cwd, self.env, child)
        except SpawnError as error:
            for fd in (stdin_read, stdin_write, stdout_read, stdout_write, stderr_read, stderr_write):
                if fd is not None:
                    os.close(fd)
            code = "invalid-cwd" if error.step == "chdir" else "spawn-failed"
            return {"code": code, "message": "the command could not start: %s" % error}
        for fd in child:
            if fd is not None:
                os.close(fd)
        if stdin_write is not None:
            self.stdin = Outbox(self.loop, stdin_write)
        limit = self.supervisor.output_limit
        for fd, name in ((stdout_read, "stdout"), (stderr_read, "stderr")):
            budget = OutputBudget(limit)
            self.streams.append(OutputStream(self.loop, fd, name, _constant(budget), self._send_output, self._maybe_end))
        self.loop.on_exit(self.pid, self._on_exit)
        return None

    def write_stdin(self, data, eof):
        if self.stdin is None:
            return
        if data:
            self.stdin.write(data.encode("utf-8", "surrogatepass"))
        if eof:
            self.stdin.close_when_written()
            self.stdin = None

    def signal(self, number):
        if not self.ended:
            kill_group(self.pid, number)

    def _send_output(self, name, text):
        self.supervisor.send({"type": "command-output", "id": self.id, "name": name, "text": text})

    def _on_exit(self, status):
        self.status = status
        if self.stdin is not None:
            self.stdin.close()
            self.stdin = None
        self._maybe_end()
        if not self.ended:
            self.grace = self.loop.call_later(END_GRACE_S, self._end)

    def _maybe_end(self):
        if self.status is not None and not any(stream.open for stream in self.streams):
            self._end()

    def _end(self):
        if self.ended:
            return
        self.ended = True
        if self.grace is not None:
            self.grace.cancel()
        truncated = False
        for stream in self.streams:
            stream.drain()
            stream.finish()
            stream.close()
            truncated = truncated or stream.budget().truncated
        code, signal_name = exit_status(self.status)
        self.supervisor.command_ended(self)
        self.supervisor.send({"type": "command-end", "id": self.id, "exitCode": code, "signal": signal_name, "outputTruncated": truncated})

    def describe(self):
        return {"id": self.id, "pid": self.pid, "command": self.command, "cwd": self.cwd, "startedMs": self.started_ms}


def _constant(budget):
    return lambda: budget

