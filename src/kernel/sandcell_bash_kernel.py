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

Here: the requests and events (framed as sandcell_kernel_protocol.py frames
them), the order requests run in, a cell's end, interrupts, and a shell that
ended. The bash process is sandcell_bash_shell.py, the state a snapshot keeps
sandcell_bash_state.py, completion and inspection sandcell_bash_assist.py.
"""

import os
import select
import signal
import sys
import time

REQUESTS_FD = 3
EVENTS_FD = 4
RESENDS = 10
RESEND_INTERVAL_S = 0.1

# Isolated (-I), the kernel's directory is not on sys.path: put it there, as the
# supervisor does. No user Python runs in this process, so, unlike the Python
# kernel (its load_sibling), nothing can import sandcell's modules by accident.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandcell_bash_assist as assist  # noqa: E402
import sandcell_bash_state as state  # noqa: E402
import sandcell_kernel_protocol as protocol  # noqa: E402
from sandcell_bash_shell import RC_SCRIPT, Shell, end_group_members, is_complete, quote_for_bash  # noqa: E402

RC_SCRIPT = RC_SCRIPT.replace("exec 2>&62", assist.RC_FUNCTIONS + state.STATE_FUNCTIONS + "exec 2>&62")

SIGCHLD_BYTE = bytes((signal.SIGCHLD,))
SIGINT_BYTE = bytes((signal.SIGINT,))
SIGNAL_NAMES = {int(value): value.name for value in signal.Signals}


def describe_os_error(error):
    return "%s: %s" % (error.filename, error.strerror) if error.filename else str(error)


def describe_status(status):
    if status > 128 and status - 128 in SIGNAL_NAMES:
        return "exit status %d (%s)" % (status, SIGNAL_NAMES[status - 128])
    return "exit status %d" % status



class Kernel:
    def __init__(self):
        self.shell = None
        self.execution_count = 0
        self.queue = []  # executions and the other requests run in order, like the Python kernel's main thread
        self.current = None  # {"id", "interrupted"} of the running cell, and "finish" for an internal command
        self.baseline = {}  # a fresh shell's dump, {(kind, name): text}: a snapshot keeps what differs
        self.requests_pending = b""
        self.child_ended = False  # a SIGCHLD seen and not yet looked into
        self.interrupt_next = False  # a SIGINT came for the execute still waiting in the queue
        self.resends_left = 0  # SIGINTs still to send again for the running cell (see arm)
        self.resend_at = 0.0
        self.channel = protocol.Channel(EVENTS_FD)
        # Answered as they are read; the other requests wait in the queue.
        self.at_once = {"is-complete": self.answer_is_complete, "state-save": self.take_state_request, "state-load": self.take_state_request}

    def send(self, message):
        self.channel.send(message)

    def reply(self, request, **body):
        self.send(protocol.reply(request, **body))

    def fail(self, request, code, message):
        self.send(protocol.failure(request, code, message))

    # --- the shell ----------------------------------------------------------
    def start_shell(self):
        self.shell = Shell(RC_SCRIPT)
        baseline = os.path.join(self.answer_directory, "baseline")
        dumped = False
        # Until its second prompt only the shell is listened to (requests wait in their pipe).
        starting = select.poll()
        starting.register(self.shell.status_read, select.POLLIN)
        starting.register(self.wakeup_read, select.POLLIN)
        while True:
            starting.poll()
            for line in self.shell.read_statuses():
                if line.startswith("version "):
                    self.shell.version = line[8:]
                elif line.lstrip("-").isdigit() and not dumped:
                    # Up (bash sets HISTSIZE and others after its rc file): what a fresh shell holds.
                    self.shell.send(b"__sandcell_dump " + quote_for_bash(baseline) + b"; __sandcell_restore\n")
                    dumped = True
                elif line.lstrip("-").isdigit():
                    self.poller.register(self.shell.status_read, select.POLLIN)
                    try:
                        with open(baseline, "rb") as dump:
                            self.baseline = {(kind, name): text for kind, name, text in state.read_records(dump)}
                    except OSError:
                        self.baseline = {}  # (a full disk) a snapshot then keeps the environment's variables too
                    return
            if SIGCHLD_BYTE in self.read_signals() and self.shell.exited() is not None:
                raise SystemExit("sandcell: bash exited before its second prompt")

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
            if line.strip():
                protocol.take_request(line, self.at_once, self.queue.append, self.channel)

    def answer_is_complete(self, request):
        self.reply(request, **is_complete(str(request.get("code", ""))))

    def take_state_request(self, request):
        if protocol.is_absolute_path(request.get("path")):
            self.queue.append(request)
        else:
            self.fail(request, "invalid-request", "%s needs an absolute path" % request.get("type"))

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
            elif kind == "state-save":
                self.start_save(request)
            elif kind == "state-load":
                self.start_load(request)
            else:
                self.start_execution(request)

    def start_assist(self, request):
        """Asks the shell, between cells, to complete or inspect (sandcell_bash_assist.py); it
        writes its answer to a file of ours, and its prompt ends the request as it ends a cell.
        The line ends with the last cell's status, so $? in the next cell is not ours."""
        code = request.get("code")
        code = code if isinstance(code, str) else ""
        answer = os.path.join(self.answer_directory, "answer")
        remove(answer)
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
        self.run_internal(line + b" " + quote_for_bash(answer), lambda error: self.finish_assist(request, pending, answer))

    def run_internal(self, line, finish):
        """Runs a command of ours in the shell between cells; the prompt's
        status ends it, and `finish(error)` answers (error is set when the
        shell ended under it)."""
        self.current = {"interrupted": False, "finish": finish}
        self.shell.send(line + b"; __sandcell_restore\n")

    def finish_assist(self, request, answer, path):
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

    # --- snapshots ---------------------------------------------------------------
    def start_save(self, request):
        """The shell dumps itself (__sandcell_dump) to a file of ours; what
        differs from a fresh shell goes to the state file (sandcell_bash_state.py)."""
        dump = os.path.join(self.answer_directory, "dump")
        remove(dump)
        self.run_internal(b"__sandcell_dump " + quote_for_bash(dump), lambda error: self.finish_save(request, dump, error))

    def finish_save(self, request, dump, error):
        if error is not None:
            remove(dump)
            return self.fail(request, "state-failed", "the shell ended while saving its state: " + error[1])
        try:
            written = state.save(dump, request["path"], self.execution_count, self.baseline)
        except OSError as failure:
            return self.fail(request, "state-failed", describe_os_error(failure))
        finally:
            remove(dump)
        if written is None:
            return self.fail(request, "state-failed", "the shell did not finish writing its state")
        self.reply(request, saved=written[0], skipped=written[1], executionCount=self.execution_count)

    def start_load(self, request):
        """Checks the file's header here, then has the shell source it at its
        top level (declare there is global), its output and bash's messages in
        a file of ours: the items' reports (read_load_report), never a cell's."""
        path = request["path"]
        try:
            count = state.saved_count(path)
        except OSError as failure:
            return self.fail(request, "state-failed", describe_os_error(failure))
        if count is None:
            return self.fail(request, "state-invalid", "%s is not a bash state (%s)" % (path, state.STATE_MAGIC.decode().strip("# \n")))
        report = os.path.join(self.answer_directory, "load")
        remove(report)
        line = b"builtin source " + quote_for_bash(path) + b" >|" + quote_for_bash(report) + b" 2>&1"
        self.run_internal(line, lambda error: self.finish_load(request, report, count, error))

    def finish_load(self, request, report, count, error):
        if error is not None:
            return self.fail(request, "state-failed", "the shell ended while loading the state: " + error[1])
        try:
            with open(report, encoding="utf-8", errors="replace") as lines:
                restored, skipped = state.read_load_report(lines)
        except OSError as failure:
            return self.fail(request, "state-failed", describe_os_error(failure))
        self.execution_count = count
        self.reply(request, restored=restored, skipped=skipped, executionCount=count)

    def end_execution(self, error=None, exit_status=None):
        current, self.current = self.current, None
        if "finish" in current:
            return current["finish"](error)  # an internal command; the shell may have ended under it
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
            if status == 0 or "finish" in self.current:
                self.end_execution()  # (an internal command's status is the last cell's, given back)
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
        if SIGINT_BYTE in received and self.current is not None and "finish" not in self.current:
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
        self.send(protocol.ready("bash", self.shell.version))
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


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def main():
    os.environ.pop("SANDCELL_KERNEL_OPTIONS", None)  # bash needs none of them; keep it out of the user's env
    for fd in (REQUESTS_FD, EVENTS_FD):
        os.set_inheritable(fd, False)
    os.set_blocking(REQUESTS_FD, False)  # read when poll says so, and drained on an interrupt
    Kernel().run()


if __name__ == "__main__":
    main()
