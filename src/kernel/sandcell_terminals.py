"""Terminals: a program (an interactive bash by default) on a pseudo-terminal
the supervisor opens, as the session's other processes are: same uid, limits
and cgroup, its own session with the terminal as its controlling one. What it
writes goes to the host as `terminal-output` (base64: a terminal's bytes are
not always text), paced by the host: at most WINDOW_BYTES are out unacknowledged
(`terminal-ack`), past that the pty is not read, so the program blocks in its
write and nothing piles up here or on the host. Input, resizes (TIOCSWINSZ; the
kernel sends SIGWINCH to the foreground job) and signals come back the other way.
Ctrl-C is a byte of input like any other: the line discipline interrupts the
foreground job, not the shell.

Loaded by the first terminal request: its imports are no cold start's.
"""

import base64
import binascii
import fcntl
import os
import signal
import struct
import termios

from sandcell_event_loop import READABLE, Outbox, exit_status
from sandcell_process import SpawnError, kill_group, spawn
from sandcell_routes import RequestError, check_id, merge_env, resolve_cwd

WINDOW_BYTES = 256 * 1024
READ_BYTES = 64 * 1024
# Input waiting for a program that does not read it: past this many writes, more is dropped (and said).
INPUT_QUEUE_WRITES = 64
MAX_SIZE = 1000
END_GRACE_S = 0.1
SIGNALS = {"SIGINT": signal.SIGINT, "SIGQUIT": signal.SIGQUIT, "SIGTSTP": signal.SIGTSTP, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP, "SIGKILL": signal.SIGKILL}


def check_size(message):
    cols, rows = message.get("cols"), message.get("rows")
    if type(cols) is not int or type(rows) is not int or not (1 <= cols <= MAX_SIZE and 1 <= rows <= MAX_SIZE):
        raise RequestError("invalid-request", "cols and rows are whole numbers from 1 to %d" % MAX_SIZE)
    return cols, rows


def set_size(fd, cols, rows):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def take_terminal():
    """In the child, with the pty's far end on 0, 1 and 2: make it the controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    def __init__(self, supervisor, terminal_id, argv, cwd, env):
        self.supervisor = supervisor
        self.loop = supervisor.loop
        self.id = terminal_id
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.pid = None
        self.master = None
        self.input = None
        self.status = None
        self.unacked = 0
        self.reading = False
        self.eof = False
        self.ended = False
        self.grace = None
        self.dropped_input = False

    def start(self, cols, rows):
        """Opens the pty and starts the program; returns an error {code, message} or None."""
        master, slave = os.openpty()
        try:
            set_size(slave, cols, rows)
            self.pid = spawn(self.argv, self.cwd, self.env, [slave, slave, slave], take_terminal)
        except SpawnError as error:
            os.close(master)
            code = "invalid-cwd" if error.step == "chdir" else "spawn-failed"
            return {"code": code, "message": "the terminal could not start: %s" % error}
        finally:
            os.close(slave)
        self.master = master
        os.set_blocking(master, False)
        self.input = Outbox(self.loop, os.dup(master))
        self._read_on()
        self.loop.on_exit(self.pid, self._on_exit)
        return None

    # --- from the host ------------------------------------------------------
    def write(self, data):
        if self.ended or self.input is None or not data:
            return
        if len(self.input.queue) >= INPUT_QUEUE_WRITES:
            if not self.dropped_input:
                self.dropped_input = True
                self.supervisor.log("terminal %s: its program reads no input; input past %d waiting writes was dropped" % (self.id, INPUT_QUEUE_WRITES))
            return
        self.dropped_input = False
        self.input.write(data)

    def resize(self, cols, rows):
        if not self.ended:
            set_size(self.master, cols, rows)

    def ack(self, count):
        self.unacked = max(0, self.unacked - count)
        if self.unacked < WINDOW_BYTES and not self.reading and not self.eof and not self.ended:
            self._read_on()

    def signal(self, number):
        """SIGINT, SIGQUIT, SIGTSTP: the foreground job, as the keys would; the others end the terminal's whole session."""
        if self.ended:
            return
        if number in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP):
            try:
                kill_group(os.tcgetpgrp(self.master), number)
            except OSError:
                kill_group(self.pid, number)
            return
        for group in self._groups():
            kill_group(group, number)

    def close(self):
        """Ends it: SIGKILL to every job of its session."""
        if not self.ended:
            for group in self._groups():
                kill_group(group)

    # --- the program's side -------------------------------------------------
    def _groups(self):
        groups = {self.pid}
        try:
            groups.add(os.tcgetpgrp(self.master))
        except OSError:
            pass
        return groups

    def _read_on(self):
        self.reading = True
        self.loop.register(self.master, READABLE, self._on_readable)

    def _read_off(self):
        self.reading = False
        self.loop.unregister(self.master)

    def _on_readable(self, mask):
        try:
            data = os.read(self.master, READ_BYTES)
        except BlockingIOError:
            return
        except OSError:  # EIO: every process holding the far end has closed it
            data = b""
        if not data:
            self.eof = True
            self._read_off()
            self._maybe_end()
            return
        self._send(data)
        if self.unacked >= WINDOW_BYTES:
            self._read_off()

    def _send(self, data):
        self.unacked += len(data)
        self.supervisor.send({"type": "terminal-output", "id": self.id, "data": base64.b64encode(data).decode("ascii")})

    def _on_exit(self, status):
        self.status = status
        self._maybe_end()
        if not self.ended:
            # A job it left running still holds the terminal: what it wrote up to now is read, then it ends.
            self.grace = self.loop.call_later(END_GRACE_S, self._end)

    def _maybe_end(self):
        if self.status is not None and self.eof:
            self._end()

    def _end(self):
        if self.ended:
            return
        if self.grace is not None:
            self.grace.cancel()
        if not self.eof and self.unacked < WINDOW_BYTES:
            try:
                while True:
                    data = os.read(self.master, READ_BYTES)
                    if not data:
                        break
                    self._send(data)
                    if self.unacked >= WINDOW_BYTES:
                        break
            except OSError:
                pass
        self.ended = True
        for group in self._groups():
            kill_group(group)
        if self.reading:
            self._read_off()
        self.input.close()
        os.close(self.master)
        code, signal_name = exit_status(self.status)
        self.supervisor.terminals.pop(self.id, None)
        self.supervisor.send({"type": "terminal-end", "id": self.id, "exitCode": code, "signal": signal_name})

    def describe(self):
        return {"id": self.id, "pid": self.pid}


def terminal_open(supervisor, message):
    terminal_id = message.get("id")
    check_id(terminal_id, "terminal")
    if terminal_id in supervisor.terminals:
        supervisor.log("terminal-open: a terminal %r is open already; the request was ignored" % terminal_id)
        return
    cols, rows = check_size(message)
    argv = message.get("argv")
    if argv is None:
        argv = [supervisor.bash, "-i", "-l"]
    if not isinstance(argv, list) or not argv or len(argv) > 4096 or not all(isinstance(word, str) and "\0" not in word for word in argv):
        raise RequestError("invalid-request", "argv must be a list of 1 to 4096 strings without NUL bytes")
    env = merge_env(dict(supervisor.command_env, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8"), message.get("env"))
    terminal = Terminal(supervisor, terminal_id, argv, resolve_cwd(message.get("cwd")), env)
    error = terminal.start(cols, rows)
    if error is not None:
        supervisor.send({"type": "terminal-end", "id": terminal_id, "exitCode": None, "signal": None, "error": error})
        return
    supervisor.terminals[terminal_id] = terminal
    supervisor.send({"type": "terminal-started", "id": terminal_id, "pid": terminal.pid})


def terminal_input(supervisor, message):
    terminal = supervisor.terminals.get(message.get("id"))
    data = message.get("data")
    if terminal is None or not isinstance(data, str):
        return
    try:
        terminal.write(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        supervisor.log("terminal-input: data is not base64; dropped")


def terminal_resize(supervisor, message):
    terminal = supervisor.terminals.get(message.get("id"))
    if terminal is not None:
        terminal.resize(*check_size(message))


def terminal_ack(supervisor, message):
    terminal = supervisor.terminals.get(message.get("id"))
    count = message.get("bytes")
    if terminal is not None and type(count) is int and count > 0:
        terminal.ack(count)


def terminal_signal(supervisor, message):
    terminal = supervisor.terminals.get(message.get("id"))
    number = SIGNALS.get(message.get("signal"))
    if number is None:
        raise RequestError("invalid-request", "a terminal can be sent %s; got %r" % (", ".join(SIGNALS), message.get("signal")))
    if terminal is not None:
        terminal.signal(number)


def terminal_close(supervisor, message):
    terminal = supervisor.terminals.get(message.get("id"))
    if terminal is not None:
        terminal.close()


def terminal_list(supervisor, message):
    supervisor.reply(message, {"terminals": [terminal.describe() for terminal in supervisor.terminals.values()]})
