"""The bash process behind a bash context (sandcell_bash_kernel.py says how
its cells run): the interactive shell started with our rc file, its command
pipe and its status pipe, code quoted as one bash word, `bash -n` for
is-complete, and the end of what a discarded shell left running.
"""

import os
import signal

STATUS_FD = 63  # the shell's end of the status pipe: high, out of the way of scripts' own
STDERR_FD = 62  # the real stderr while the shell starts (see RC_SCRIPT)
RC_FD = 61
STATUS_LINE_BYTES = 64
BASH = "/bin/bash"

# Read by bash as its rc file (--rcfile /dev/fd/61). bash starts with stderr on
# /dev/null, so the notice an interactive shell without a terminal prints about
# job control never reaches the user, then takes the real one back here. The
# kernel puts its functions in front of that last line (Shell's rc_script).
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


def quote_for_bash(code):
    """CODE (text or bytes) as a bash $'...' word on one line: the shell
    then parses it whole, and eval runs it with its line breaks back."""
    data = code if isinstance(code, bytes) else code.encode("utf-8", "replace")
    data = data.replace(b"\\", b"\\\\").replace(b"'", b"\\'")
    if any(byte < 32 or byte == 127 for byte in data):
        data = b"".join(b"\\x%02x" % byte if byte < 32 or byte == 127 else bytes((byte,)) for byte in data)
    return b"$'" + data + b"'"


class Shell:
    """One bash process and its two pipes."""

    def __init__(self, rc_script):
        rc_read, rc_write = os.pipe()
        os.write(rc_write, rc_script.encode())
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
