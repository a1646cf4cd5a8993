"""sandcell's bash kernel: one persistent shell per context (protocol v2, an
fd 3/4 kernel: requests on fd 3, events on fd 4; see docs/kernel-protocol.md).

The shell is an interactive bash (`-i` without job control or line editing)
because only an interactive shell abandons the rest of a command line on
SIGINT and keeps running: a non-interactive one either dies or, with a trap,
goes on with the next command, so a loop could never be interrupted. It
writes straight to fds 1 and 2 (the supervisor's pipes) and reads its command
lines from a pipe of ours. Each cell is sent as one line,
`echo s >&63; trap - INT; __sandcell_restore; eval $'CODE' </dev/null`, so
its stdin is /dev/null (reading gets EOF) and state (cwd, variables,
functions, aliases) stays in the shell. The shell's PROMPT_COMMAND writes the
cell's exit status to fd 63, a pipe back to us: every status line ends the
running cell. Between cells the shell ignores SIGINT, so a late interrupt
never aborts the next line while it is still being read; the `s` line says
SIGINT is about to stop the cell again, and an interrupt that came before it
is delivered again from then on (see arm). The `s` is written while SIGINT is
still ignored: bash's echo checks for an interrupt between its word and the
line break, and one taken there left the `s` in bash's stdio buffer, flushed
later into the cell's stdout.
"""

import json
import os
import select
import signal
import sys
import time

PROTOCOL_VERSION = 2
REQUESTS_FD = 3
EVENTS_FD = 4
STATUS_FD = 63  # the shell's end of the status pipe: high, out of the way of scripts' own
STDERR_FD = 62  # the real stderr while the shell starts (see RC_SCRIPT)
RC_FD = 61
STATUS_LINE_BYTES = 64
RESENDS = 10
RESEND_INTERVAL_S = 0.1
BASH = "/bin/bash"

# Read by bash as its rc file (--rcfile /dev/fd/61). bash starts with stderr on
# /dev/null, so the notice an interactive shell without a terminal prints about
# job control never reaches the user, then takes the real one back here.
RC_SCRIPT = r"""PS0=''; PS1=''; PS2=''
set +o history +H
unset HISTFILE MAILCHECK
__sandcell_prompt() { __sandcell_status=$?; trap '' INT; printf '%d\n' "$__sandcell_status" >&63; }
__sandcell_restore() { return "$__sandcell_status"; }
PROMPT_COMMAND=__sandcell_prompt
readonly PROMPT_COMMAND PS0 PS1
readonly -f __sandcell_prompt __sandcell_restore
printf 'version %s.%s.%s\n' "${BASH_VERSINFO[0]}" "${BASH_VERSINFO[1]}" "${BASH_VERSINFO[2]}" >&63
exec 2>&62 62>&- 61<&-
"""


# Isolated (-I), the kernel's directory is not on sys.path: put it there, as the
# supervisor does. No user Python runs in this process, so, unlike the Python
# kernel (its load_sibling), nothing can import sandcell's modules by accident.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandcell_bash_assist as assist  # noqa: E402
RC_SCRIPT = RC_SCRIPT.replace("exec 2>&62", assist.RC_FUNCTIONS + "exec 2>&62")

SIGCHLD_BYTE = bytes((signal.SIGCHLD,))
SIGINT_BYTE = bytes((signal.SIGINT,))
SIGNAL_NAMES = {int(value): value.name for value in signal.Signals}


def quote_for_bash(code):
    """CODE as a bash $'...' word on one line: the shell then parses it
    whole, and eval runs it with its line breaks back."""
    data = code.encode("utf-8", "replace")
    data = data.replace(b"\\", b"\\\\").replace(b"'", b"\\'")
    if any(byte < 32 or byte == 127 for byte in data):
        data = b"".join(b"\\x%02x" % byte if byte < 32 or byte == 127 else bytes((byte,)) for byte in data)
    return b"$'" + data + b"'"


def describe_status(status):
    if status > 128 and status - 128 in SIGNAL_NAMES:
        return "exit status %d (%s)" % (status, SIGNAL_NAMES[status - 128])
    return "exit status %d" % status


class Shell:
    """One bash process and its two pipes."""

    def __init__(self):
        rc_read, rc_write = os.pipe()
        os.write(rc_write, RC_SCRIPT.encode())
        os.close(rc_write)
        command_read, self.command_write = os.pipe()
        self.status_read, status_write = os.pipe()
        os.set_blocking(self.status_read, False)
        devnull = os.open(os.devnull, os.O_RDWR)
        actions = [
            (os.POSIX_SPAWN_DUP2, command_read, 0),
            (os.POSIX_SPAWN_DUP2, 2, STDERR_FD),
            (os.POSIX_SPAWN_DUP2, devnull, 2),
            (os.POSIX_SPAWN_DUP2, status_write, STATUS_FD),
            (os.POSIX_SPAWN_DUP2, rc_read, RC_FD),
        ]
        argv = ["bash", "--rcfile", "/dev/fd/%d" % RC_FD, "--noediting", "-i", "+m"]
        try:
            self.pid = os.posix_spawn(BASH, argv, os.environ, file_actions=actions)
        finally:
            for fd in (rc_read, command_read, status_write, devnull):
                os.close(fd)
        self.pending = b""
        self.version = None

    def send(self, line):
        view = memoryview(line)
        while view:
            view = view[os.write(self.command_write, view) :]

    def read_statuses(self):
        """The complete lines the shell wrote since the last call."""
        try:
            data = os.read(self.status_read, 4096)
        except BlockingIOError:
            return []  # a stale readiness (a discarded shell's descriptor number, reused)
        if not data:
            return []
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()[-STATUS_LINE_BYTES:]  # bounded, whatever the code writes to fd 63
        return [line.decode("ascii", "replace") for line in lines]

    def exited(self):
        """The shell's wait status once it has ended, else None."""
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        return status if pid else None

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.command_write)
        os.close(self.status_read)


def end_group_members():
    """Ends what a discarded shell left running (its background jobs), which
    share our process group. Only as a group leader (started with setsid, as
    the supervisor does): otherwise the group is someone else's."""
    own = os.getpid()
    if os.getpgid(0) != own:
        return
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != own:
            try:
                if os.getpgid(int(entry)) == own:
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


class Kernel:
    def __init__(self):
        self.shell = None
        self.execution_count = 0
        self.queue = []  # execute, reset and ping run in order, like the Python kernel's main thread
        self.current = None  # {"id", "interrupted"} of the running cell
        self.requests_pending = b""
        self.child_ended = False  # a SIGCHLD seen and not yet looked into
        self.interrupt_next = False  # a SIGINT came for the execute still waiting in the queue
        self.resends_left = 0  # SIGINTs still to send again for the running cell (see arm)
        self.resend_at = 0.0

    def send(self, message):
        data = (json.dumps(message, ensure_ascii=True) + "\n").encode("ascii")
        view = memoryview(data)
        while view:
            view = view[os.write(EVENTS_FD, view) :]

    def reply(self, request, ok=True, **body):
        message = {"type": "reply", "id": request.get("id"), "ok": ok}
        message.update(body)
        self.send(message)

    # --- the shell ----------------------------------------------------------
    def start_shell(self):
        self.shell = Shell()
        # Until its first prompt only the shell is listened to (requests wait in their pipe).
        starting = select.poll()
        starting.register(self.shell.status_read, select.POLLIN)
        starting.register(self.wakeup_read, select.POLLIN)
        while True:
            starting.poll()
            for line in self.shell.read_statuses():
                if line.startswith("version "):
                    self.shell.version = line[8:]
                elif line.lstrip("-").isdigit():
                    self.poller.register(self.shell.status_read, select.POLLIN)
                    return
            if SIGCHLD_BYTE in self.read_signals() and self.shell.exited() is not None:
                raise SystemExit("sandcell: bash exited before its first prompt")

    def discard_shell(self):
        if self.shell is not None:
            self.poller.unregister(self.shell.status_read)
            self.shell.close()
            self.shell = None
            end_group_members()

    # --- requests -------------------------------------------------------------
    def on_requests(self):
        self.read_requests()
        self.run_queue()

    def read_requests(self):
        """Queues the requests waiting on fd 3 (answering is-complete at once)."""
        try:
            data = os.read(REQUESTS_FD, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self.discard_shell()
            raise SystemExit(0)  # the supervisor closed our requests: it is gone
        lines = (self.requests_pending + data).split(b"\n")
        self.requests_pending = lines.pop()
        for line in lines:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError
            except ValueError:
                self.send({"type": "protocol-error", "message": "invalid JSON request"})
                continue
            kind = request.get("type")
            if kind == "is-complete":
                self.reply(request, **is_complete(str(request.get("code", ""))))
            elif kind in ("execute", "reset", "ping", "complete", "inspect"):
                self.queue.append(request)
            else:
                error = {"code": "unknown-request", "message": "unknown request type %r" % kind}
                self.reply(request, ok=False, error=error)

    def run_queue(self):
        while self.current is None and self.queue:
            request = self.queue.pop(0)
            kind = request.get("type")
            if kind == "ping":
                self.reply(request)
            elif kind == "reset":
                self.discard_shell()
                self.start_shell()
                self.execution_count = 0
                self.reply(request)
            elif kind in ("complete", "inspect"):
                self.start_assist(request)
            else:
                self.start_execution(request)

    def start_assist(self, request):
        """Asks the shell, between cells, to complete or inspect (sandcell_bash_assist.py); it
        writes its answer to a file of ours, and its prompt ends the request as it ends a cell.
        The line ends with the last cell's status, so $? in the next cell is not ours."""
        code = request.get("code")
        code = code if isinstance(code, str) else ""
        answer = os.path.join(self.answer_directory, "answer")
        try:
            os.unlink(answer)
        except FileNotFoundError:
            pass
        if request.get("type") == "complete":
            kind, word, start, end = assist.completion_request(code, request.get("cursorPos"))
            pending = {"matches": [], "cursorStart": start, "cursorEnd": end, "metadata": {}}
            line = b"__sandcell_complete " + kind.encode() + b" " + quote_for_bash(word)
        else:
            word = assist.inspection_word(code, request.get("cursorPos"))
            pending = {"found": False, "data": {}, "metadata": {}}
            if not word or "\x00" in word:
                self.reply(request, **pending)
                return
            line = b"__sandcell_inspect " + quote_for_bash(word)
        self.current = {"id": request.get("id"), "interrupted": False, "assist": (request, pending, answer)}
        self.shell.send(line + b" " + quote_for_bash(answer) + b"; __sandcell_restore\n")

    def finish_assist(self):
        current, self.current = self.current, None
        request, answer, path = current["assist"]
        if request.get("type") == "complete":
            answer["matches"] = assist.read_matches(path)
        else:
            answer = assist.read_inspection(path)
        self.reply(request, **answer)

    def start_execution(self, request):
        code = str(request.get("code", ""))
        self.execution_count += 1
        self.current = {"id": request.get("id"), "interrupted": self.interrupt_next}
        self.interrupt_next = False
        if "\x00" in code:
            self.end_execution(error=("SyntaxError", "bash code cannot contain NUL bytes"))
            return
        self.shell.send(b"echo s >&63; trap - INT; __sandcell_restore; eval " + quote_for_bash(code) + b" </dev/null\n")

    def end_execution(self, error=None, exit_status=None):
        if "assist" in self.current:
            return self.finish_assist()  # the shell ended under a completion: what it wrote, if anything
        current, self.current = self.current, None
        self.resends_left = 0
        if error is not None:
            self.send({"type": "error", "id": current["id"], "name": error[0], "value": error[1], "traceback": []})
        end = {"type": "execution-end", "id": current["id"], "status": "error" if error else "ok"}
        end.update({"executionCount": self.execution_count, "outputTruncated": False})
        if exit_status is not None:
            end["exitStatus"] = exit_status  # the shell ended: `sandcell run` exits with its status, `repl` ends
        self.send(end)

    # --- events from the shell and signals ------------------------------------
    def on_statuses(self):
        for line in self.shell.read_statuses():
            if self.current is None:
                continue  # not a cell's: something the code's children wrote to fd 63
            if line == "s":
                self.arm()
                continue
            if not line.lstrip("-").isdigit():
                continue
            status = int(line)
            if status == 0:
                self.end_execution()
            elif self.current["interrupted"]:
                self.end_execution(error=("Interrupted", "the execution was interrupted (SIGINT)"))
            else:
                self.end_execution(error=("ExitStatus", describe_status(status)))
        self.run_queue()

    def arm(self):
        """The shell is about to stop the cell on SIGINT (`trap - INT` follows
        the `s`). One that came before (while the shell still ignored it,
        reading the line) is delivered again, and again every
        RESEND_INTERVAL_S while the cell runs: the first may still find the
        shell ignoring it, and one sent while bash forks reaches neither
        bash's child (not yet in the group) nor stops bash (which then waits
        for that child to end by itself). One that comes between the `s` and
        the trap is the supervisor's to repeat, as it does for every
        interrupt."""
        if self.current["interrupted"]:
            self.resends_left = RESENDS
            self.resend_interrupt()

    def resend_interrupt(self):
        self.resends_left -= 1
        self.resend_at = time.monotonic() + RESEND_INTERVAL_S
        own = os.getpid()
        if os.getpgid(0) == own:
            os.killpg(own, signal.SIGINT)  # the shell and what it runs, as the supervisor's own
        else:
            os.kill(self.shell.pid, signal.SIGINT)
        # Our own copy was delivered before killpg returned: drop its byte, keep the rest.
        self.absorb_signals(self.read_signals().replace(SIGINT_BYTE, b""))

    def read_signals(self):
        try:
            return os.read(self.wakeup_read, 512)
        except BlockingIOError:
            return b""

    def on_signals(self):
        self.absorb_signals(self.read_signals())
        self.run_queue()  # an interrupt may have drained fd 3: what it queued runs now

    def absorb_signals(self, received):
        if SIGINT_BYTE in received and self.current is not None and "assist" not in self.current:
            self.current["interrupted"] = True  # the shell got the same SIGINT (or gets it once armed)
        elif SIGINT_BYTE in received:
            # The supervisor interrupts an execution it has sent, which may still
            # wait unread on fd 3: then it is that one's, delivered once it runs.
            # With nothing waiting, it came late for one that has ended.
            self.read_requests()
            self.interrupt_next = any(request.get("type") == "execute" for request in self.queue)
        self.child_ended = self.child_ended or SIGCHLD_BYTE in received
        if not self.child_ended or self.shell is None:
            return
        self.child_ended = False
        status = self.shell.exited()
        if status is None:
            return
        # `exit`, `exec`, `set -e` or a kill ended the shell: start a fresh one.
        if os.WIFSIGNALED(status):
            how = "was killed by %s" % SIGNAL_NAMES.get(os.WTERMSIG(status), os.WTERMSIG(status))
            exit_status = 128 + os.WTERMSIG(status)  # as a shell reports it in $?
        else:
            how = "exited with status %d" % os.WEXITSTATUS(status)
            exit_status = os.WEXITSTATUS(status)
        self.discard_shell()
        self.start_shell()
        if self.current is not None:
            value = "the shell %s; a new shell was started (variables, functions, aliases and the working directory were reset)"
            self.end_execution(error=("ShellExited", value % how), exit_status=exit_status)
        self.run_queue()

    def run(self):
        self.wakeup_read, wakeup_write = os.pipe()
        os.set_blocking(wakeup_write, False)
        os.set_blocking(self.wakeup_read, False)
        signal.set_wakeup_fd(wakeup_write, warn_on_full_buffer=False)
        # Handlers (not SIG_IGN, which bash would inherit and could not undo):
        # the wakeup pipe carries the signal numbers to the loop.
        signal.signal(signal.SIGINT, lambda number, frame: None)
        signal.signal(signal.SIGCHLD, lambda number, frame: None)
        self.poller = select.poll()
        self.poller.register(self.wakeup_read, select.POLLIN)
        import tempfile

        self.answer_directory = tempfile.mkdtemp(prefix="sandcell-bash-")
        self.start_shell()
        self.poller.register(REQUESTS_FD, select.POLLIN)
        self.send({"type": "ready", "protocolVersion": PROTOCOL_VERSION, "language": "bash", "version": self.shell.version, "pid": os.getpid()})
        while True:
            timeout = None
            if self.resends_left > 0:
                timeout = max(0, (self.resend_at - time.monotonic()) * 1000)
            ready = [fd for fd, _ in self.poller.poll(timeout)]
            if self.resends_left > 0 and self.current is not None and time.monotonic() >= self.resend_at:
                self.resend_interrupt()
            # Signals first, whatever poll said: an interrupt must be seen before
            # the status it caused, and poll can return that status alone while
            # the signal's handler (run as poll returned) has already written
            # its byte to the wakeup pipe.
            self.on_signals()
            for fd in ready:
                if self.shell is not None and fd == self.shell.status_read:
                    self.on_statuses()
                elif fd == REQUESTS_FD:
                    self.on_requests()


def is_complete(code):
    """`bash -n` on the code: a construct left open (quote, if, loop, here
    document, a trailing backslash or pipe) makes it incomplete."""
    import subprocess

    stripped = code.rstrip("\n")
    if (len(stripped) - len(stripped.rstrip("\\"))) % 2 == 1:
        return {"status": "incomplete", "indent": 0}
    try:
        checked = subprocess.run([BASH, "-n"], input=code.encode("utf-8", "replace"), capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return {"status": "unknown", "indent": 0}
    message = checked.stderr.decode("utf-8", "replace")
    if "unexpected end of file" in message or "unexpected EOF" in message or "delimited by end-of-file" in message:
        return {"status": "incomplete", "indent": 0}
    return {"status": "complete" if checked.returncode == 0 else "invalid", "indent": 0}


def main():
    os.environ.pop("SANDCELL_KERNEL_OPTIONS", None)  # bash needs none of them; keep it out of the user's env
    for fd in (REQUESTS_FD, EVENTS_FD):
        os.set_inheritable(fd, False)
    os.set_blocking(REQUESTS_FD, False)  # read when poll says so, and drained on an interrupt
    Kernel().run()


if __name__ == "__main__":
    main()
