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
import re
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

# The shell's state as NUL-separated (kind, name, text) records, for a
# snapshot and, once a fresh shell is up, as its baseline. The options come
# first, as the code left them: then `local -` keeps its set -e and noclobber
# out of the rest. Names containing a line break are not listed.
STATE_FUNCTIONS = r"""__sandcell_dump() {
  { printf 'o\0\0'; shopt -p; set +o; printf '\0'; } >"$1" 2>/dev/null
  local - __sandcell_name; set +euC
  {
    while IFS= read -r __sandcell_name; do
      printf 'v\0%s\0' "$__sandcell_name"; declare -p -- "$__sandcell_name"; printf '\0'
    done < <(compgen -v)
    printf 'w\0\0%s\0' "$PWD"
    while IFS= read -r __sandcell_name; do
      printf 'f\0%s\0' "$__sandcell_name"; declare -pF -- "$__sandcell_name"; declare -f -- "$__sandcell_name"; printf '\0'
    done < <(compgen -A function)
    while IFS= read -r __sandcell_name; do
      printf 'a\0%s\0' "$__sandcell_name"; alias -- "$__sandcell_name"; printf '\0'
    done < <(compgen -a)
    printf 'j\0\0'; jobs -r; printf '\0'
    printf 'e\0\0\0'
  } >>"$1" 2>/dev/null
}
__sandcell_loaded() { printf '\n\037%s %s\n' "$1" "$2"; }
readonly -f __sandcell_dump __sandcell_loaded
"""
STATE_MAGIC = b"# sandcell-bash-state 1\n"
STATE_COUNT = b"# execution-count "
# Bash's own variables (set, read-only or changing by themselves) and the
# working directory's, which is kept as a directory; names starting with
# BASH, COMP_ or __sandcell_ are left out as well.
SHELL_VARIABLES = frozenset(
    "_ COLUMNS DIRSTACK EPOCHREALTIME EPOCHSECONDS EUID FUNCNAME GROUPS HISTCMD LINENO LINES "
    "OLDPWD PIPESTATUS PPID PS0 PS1 PROMPT_COMMAND PWD RANDOM SECONDS SHELLOPTS SHLVL SRANDOM UID".split()
)
# What bash puts before its messages while a state is sourced.
LOAD_MESSAGE_PREFIX = re.compile(r"^bash: (?:line \d+: )?(?:(?:alias|cd|declare|set|shopt|unset): )?")


# Isolated (-I), the kernel's directory is not on sys.path: put it there, as the
# supervisor does. No user Python runs in this process, so, unlike the Python
# kernel (its load_sibling), nothing can import sandcell's modules by accident.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandcell_bash_assist as assist  # noqa: E402
RC_SCRIPT = RC_SCRIPT.replace("exec 2>&62", assist.RC_FUNCTIONS + STATE_FUNCTIONS + "exec 2>&62")

SIGCHLD_BYTE = bytes((signal.SIGCHLD,))
SIGINT_BYTE = bytes((signal.SIGINT,))
SIGNAL_NAMES = {int(value): value.name for value in signal.Signals}


def quote_for_bash(code):
    """CODE (text or bytes) as a bash $'...' word on one line: the shell
    then parses it whole, and eval runs it with its line breaks back."""
    data = code if isinstance(code, bytes) else code.encode("utf-8", "replace")
    data = data.replace(b"\\", b"\\\\").replace(b"'", b"\\'")
    if any(byte < 32 or byte == 127 for byte in data):
        data = b"".join(b"\\x%02x" % byte if byte < 32 or byte == 127 else bytes((byte,)) for byte in data)
    return b"$'" + data + b"'"


def user_variable(name):
    return name not in SHELL_VARIABLES and not name.startswith(("BASH", "COMP_", "__sandcell_"))


def read_records(dump):
    """The (kind, name, text) records of a dump (__sandcell_dump), read a
    piece at a time: a large variable is held once, not the whole state."""
    fields, pieces = [], []
    for chunk in iter(lambda: dump.read(1 << 20), b""):
        parts = chunk.split(b"\0")
        for part in parts[:-1]:
            pieces.append(part)
            fields.append(b"".join(pieces))
            pieces = []
            if len(fields) == 3:
                yield tuple(fields)
                fields = []
        pieces.append(parts[-1])


def write_state(records, baseline, out):
    """Writes what the dump holds that differs from a fresh shell's (the
    baseline: what the environment and bash set), as the bash a load sources,
    each item followed by `__sandcell_loaded $? NAME`, its report. Variables
    come first (no function or alias of the code's can stand in for `declare`
    yet), then the working directory, functions, aliases (after the function
    definitions, which they would rewrite), and options, errexit last (until
    then a failing item cannot end the shell). Returns (saved, skipped), or
    None for a dump the shell did not finish."""
    saved, skipped, present, options = [], [], set(), []

    def item(name, code):
        out.write(code if code.endswith(b"\n") else code + b"\n")
        out.write(b"__sandcell_loaded $? " + quote_for_bash(name) + b"\n")
        if name not in saved:
            saved.append(name)

    for kind, name, text in records:
        key = name.decode("utf-8", "replace")
        changed = baseline.get((kind, name)) != text
        if kind == b"v":
            present.add(name)
            if changed and user_variable(key):
                # One of the environment's goes first: declare would keep an attribute it has lost (export).
                unset = b"builtin unset -v -- " + name + b"\n" if (kind, name) in baseline else b""
                item(key, unset + text)
        elif kind == b"w":
            for gone_kind, gone in baseline:
                if gone_kind == b"v" and gone not in present and user_variable(gone.decode("utf-8", "replace")):
                    item(gone.decode("utf-8", "replace"), b"builtin unset -v -- " + gone)
            item("(working directory)", b"builtin cd -- " + quote_for_bash(text))
        elif kind == b"f" and changed and not key.startswith("__sandcell_"):
            attributes, _, definition = text.partition(b"\n")  # `declare -fx NAME`, then the definition
            item(key, definition)
            flags = attributes.split(b" ")[1][2:]
            if flags:
                item(key, b"builtin declare -f" + flags + b" -- " + quote_for_bash(name))
        elif kind == b"a" and changed:
            item("alias " + key, b"builtin alias -- " + text[len(b"alias ") :])
        elif kind == b"o":
            fresh = set(baseline.get((kind, name), b"").splitlines())
            options = [line for line in text.splitlines() if line not in fresh]
        elif kind == b"j":
            for job in re.findall(rb"^\[(\d+)\]", text, re.MULTILINE):
                skipped.append({"name": "job %" + job.decode(), "reason": "a running process is not kept"})
        elif kind == b"e":
            for line in sorted(options, key=lambda line: line == b"set -o errexit"):
                item("(options)", b"builtin " + line)
            out.write(b"__sandcell_loaded 0 ''\n")  # the end: a load that stopped before it says so
            return saved, skipped
    return None


def read_load_report(report):
    """What a load's markers (__sandcell_loaded) say, as (restored, skipped):
    bash's messages before a marker are the reasons its item failed."""
    restored, failed, messages, finished = {}, {}, [], False
    for line in report:
        line = line.rstrip("\n")
        if not line.startswith("\x1f"):
            if line:
                messages.append(LOAD_MESSAGE_PREFIX.sub("", line))
            continue
        status, _, name = line[1:].partition(" ")
        if not name:
            finished = True
        elif status != "0":
            failed.setdefault(name, []).extend(messages or ["exit status " + status])
        else:
            restored[name] = True
        messages = []
    skipped = [{"name": name, "reason": "; ".join(reasons)} for name, reasons in failed.items()]
    if not finished:
        skipped.append({"name": "(the rest of the state)", "reason": "; ".join(messages) or "the load stopped"})
    return [name for name in restored if name not in failed], skipped


def describe_os_error(error):
    return "%s: %s" % (error.filename, error.strerror) if error.filename else str(error)


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
        self.queue = []  # executions and the other requests run in order, like the Python kernel's main thread
        self.current = None  # {"id", "interrupted"} of the running cell, and "finish" for an internal command
        self.baseline = {}  # a fresh shell's dump, {(kind, name): text}: a snapshot keeps what differs
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

    def fail(self, request, code, message):
        self.reply(request, ok=False, error={"code": code, "message": message})

    # --- the shell ----------------------------------------------------------
    def start_shell(self):
        self.shell = Shell()
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
                            self.baseline = {(kind, name): text for kind, name, text in read_records(dump)}
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
            elif kind in ("state-save", "state-load") and not valid_path(request.get("path")):
                self.fail(request, "invalid-request", "%s needs an absolute path" % kind)
            elif kind in ("execute", "reset", "ping", "complete", "inspect", "state-save", "state-load"):
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
        differs from a fresh shell goes to the state file (write_state)."""
        dump = os.path.join(self.answer_directory, "dump")
        remove(dump)
        self.run_internal(b"__sandcell_dump " + quote_for_bash(dump), lambda error: self.finish_save(request, dump, error))

    def finish_save(self, request, dump, error):
        if error is not None:
            remove(dump)
            return self.fail(request, "state-failed", "the shell ended while saving its state: " + error[1])
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
        try:
            with open(dump, "rb") as dumped, open(os.open(request["path"], flags, 0o600), "wb") as out:
                os.fchmod(out.fileno(), 0o600)
                out.write(STATE_MAGIC + STATE_COUNT + b"%d\n" % self.execution_count)
                written = write_state(read_records(dumped), self.baseline, out)
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
            with open(path, "rb") as state:
                magic, count = state.readline(len(STATE_MAGIC)), state.readline(64)
        except OSError as failure:
            return self.fail(request, "state-failed", describe_os_error(failure))
        count = re.fullmatch(re.escape(STATE_COUNT) + rb"(\d+)\n", count)
        if magic != STATE_MAGIC or not count:
            return self.fail(request, "state-invalid", "%s is not a bash state (%s)" % (path, STATE_MAGIC.decode().strip("# \n")))
        report = os.path.join(self.answer_directory, "load")
        remove(report)
        line = b"builtin source " + quote_for_bash(path) + b" >|" + quote_for_bash(report) + b" 2>&1"
        self.run_internal(line, lambda error: self.finish_load(request, report, int(count.group(1)), error))

    def finish_load(self, request, report, count, error):
        if error is not None:
            return self.fail(request, "state-failed", "the shell ended while loading the state: " + error[1])
        try:
            with open(report, encoding="utf-8", errors="replace") as lines:
                restored, skipped = read_load_report(lines)
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


def valid_path(path):
    return isinstance(path, str) and os.path.isabs(path) and "\x00" not in path


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


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
