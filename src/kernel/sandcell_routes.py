"""The supervisor's state and its answer to each host request: the host
channel, the table of contexts and the table of commands.

A host that has never sent a version-2 request (`context` on a request,
context-*, command-*) is taken for a version-1 host, which knows only the
one Python kernel and takes the sandbox's end for that kernel's: while that
lasts, the `python` context's unasked death ends the sandbox with its status,
and a line from it that is not a protocol message goes to the host as it is
(which kills the sandbox, as version 1 did).
"""

import json
import os
import re
import signal
import sys

from sandcell_commands import SIGNALS, Command
from sandcell_contexts import Context
from sandcell_kernels import kernel_table, language_available
from sandcell_event_loop import READABLE, EventLoop, LineReader, write_all
from sandcell_process import find_executable, kill_group
import sandcell_state

PROTOCOL_VERSION = 2
DATA_DIR = "/mnt/data"
DEFAULT_CONTEXT = "python"
ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
VERSION_2_REQUESTS = frozenset(("context-create", "context-restart", "context-remove", "command-start", "command-stdin", "command-signal", "command-list", "liveness", "state-begin", "state-pipe", "state-read", "state-write", "state-end", "file-chunk", "file-write-chunk", "port-connect", "port-list", "terminal-open", "terminal-input", "terminal-resize", "terminal-ack", "terminal-signal", "terminal-close", "terminal-list"))
CONTEXT_REQUESTS = frozenset(("execute", "interrupt", "reset", "ping", "is-complete", "complete", "inspect", "input-reply", "state-save", "state-load"))
FILE_REQUESTS = frozenset(("file-read", "file-chunk", "file-write", "file-write-chunk", "file-list", "file-remove"))
# The requests whose line a frame of raw bytes follows, and the most each may carry (one
# bound: the host's FRAME_MAX_BYTES, also sandcell_files.FRAME_BYTES, loaded only when asked).
FRAMED_REQUESTS = {"state-write": sandcell_state.CHUNK_BYTES, "file-write-chunk": sandcell_state.CHUNK_BYTES}
LOG_MESSAGE_CHARS = 4096
# Room on top of what a line carries, as the host's (src/session/output-limits.ts).
FRAMING_BYTES = 1 << 20
# What the splice adds to a kernel's line (the context key, a truncation flag).
SPLICE_BYTES = 1024


class RequestError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Supervisor:
    def __init__(self, options, kernel_directory):
        self.loop = EventLoop()
        self.output_limit = int(options.get("outputBytes", 1 << 20))
        result_limit = int(options.get("resultBytes", 32 << 20))
        file_limit = int(options.get("fileTransferBytes", 64 << 20))
        self.file_limit = file_limit
        # The host's bound on an execution's line (messageLimits), less our splice.
        self.kernel_line_limit = max(result_limit, 12 * self.output_limit) + FRAMING_BYTES - SPLICE_BYTES
        self.host_line_limit = max((file_limit + 2) // 3 * 4, self.kernel_line_limit) + FRAMING_BYTES
        self.kernel_env = dict(os.environ)
        self.command_env = {name: value for name, value in os.environ.items() if name != "SANDCELL_KERNEL_OPTIONS"}
        path = self.kernel_env.get("PATH", "/usr/bin:/bin")
        self.kernels = kernel_table(kernel_directory, sys.executable or "/usr/bin/python3")
        self.bash = find_executable("bash", path) or "/bin/bash"
        self.contexts = {}
        self.commands = {}
        self.terminals = {}  # sandcell_terminals.py
        self.archive = None  # a snapshot's tar stream under way (sandcell_state.py)
        # The host's way in to the sandbox's ports (sandcell_ports.py), and the ports that are sandcell's own.
        ingress = options.get("ingress")
        self.ingress_socket = ingress.get("socket") if isinstance(ingress, dict) and isinstance(ingress.get("socket"), str) else None
        network = options.get("network")
        self.own_ports = (network["port"],) if isinstance(network, dict) and type(network.get("port")) is int else ()
        self.ended_groups = []
        self.legacy = True
        # What goes to the host, sent once per round of the loop: the events a
        # read of a kernel's pipe brought go out in one write.
        self.outgoing = []
        self.loop.after_round = self.flush
        self.loop.on_error = self.internal_error
        host_input = 0
        if options.get("hostInputThread") is True:
            from sandcell_host_pump import pumped_host_input

            host_input = pumped_host_input()
        self.host = LineReader(host_input, self.host_line_limit, self.on_host_line, self.on_host_oversize)
        self.loop.register(host_input, READABLE, self.on_host_readable)

    # --- the host channel ---------------------------------------------------
    def send(self, message):
        self.send_parts(json.dumps(message, ensure_ascii=True, default=str).encode("ascii") + b"\n")

    def send_parts(self, *parts):
        self.outgoing.extend(parts)

    def flush(self):
        if not self.outgoing:
            return
        parts, self.outgoing = self.outgoing, []
        try:
            write_all(1, parts)
        except OSError:
            self.terminate(0)  # the host is gone

    def internal_error(self, error):
        import traceback

        self.log("supervisor: %s" % "".join(traceback.format_exception(error)))

    def log(self, message):
        self.send({"type": "log", "message": str(message)[:LOG_MESSAGE_CHARS]})

    def reply(self, message, body=None, error=None, frame=None):
        """Answers a request; `frame`: raw bytes after the line, which `body` announces (`bytes`)."""
        answer = {"type": "reply", "id": message.get("id"), "ok": error is None}
        if error is not None:
            answer["error"] = {"code": error.code, "message": str(error)}
        elif body:
            answer.update(body)
        self.send(answer)
        if frame and error is None:
            self.send_parts(frame)

    def on_host_readable(self, mask):
        if not self.host.read_once():
            self.terminate(0)  # the host closed the channel: nothing here may outlive it

    def on_host_oversize(self):
        self.log("a request over %d bytes was dropped" % self.host_line_limit)

    def on_host_line(self, line):
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self.send({"type": "protocol-error", "message": "invalid JSON request"})
            return
        kind = message.get("type")
        if not isinstance(kind, str):
            kind = None
        if self.legacy and ("context" in message or kind in VERSION_2_REQUESTS):
            self.legacy = False
        count = message.get("bytes")
        if kind in FRAMED_REQUESTS and type(count) is int and count >= 0:
            # Its bytes follow the line raw (a frame): the request is handled once they are in. Too
            # many are passed over, so the channel stays in step, and the request is refused.
            keep = count <= FRAMED_REQUESTS[kind]
            self.host.expect_bytes(count, lambda data: self.handle(kind, dict(message, data=data) if keep else message, line), keep)
            return
        self.handle(kind, message, line)

    def handle(self, kind, message, line):
        try:
            if kind in CONTEXT_REQUESTS:
                self.route(kind, message, line)
            elif kind in FILE_REQUESTS:
                self.file_request(message)
            elif kind == "shutdown":
                self.terminate(0)
            else:
                handler = HANDLERS.get(kind)
                if handler is None:
                    raise RequestError("unknown-request", "unknown request type %r" % (kind,))
                handler(self, message)
        except Exception as error:
            if not isinstance(error, RequestError):
                # A fault of the supervisor's: the request fails, the sandbox goes on.
                self.internal_error(error)
                error = RequestError("internal", "%s: %s" % (type(error).__name__, error))
            if kind == "command-start":
                self.send({"type": "command-end", "id": message.get("id"), "exitCode": None, "signal": None, "outputTruncated": False, "error": {"code": error.code, "message": str(error)}})
            elif kind == "terminal-open":
                self.send({"type": "terminal-end", "id": message.get("id"), "exitCode": None, "signal": None, "error": {"code": error.code, "message": str(error)}})
            elif kind in TERMINAL_REQUESTS and kind != "terminal-list":
                self.log("%s: %s" % (kind, error))  # its id is a terminal's, not a request's
            elif message.get("id") is not None:
                self.reply(message, error=error)
            else:
                self.log(error)

    # --- contexts -----------------------------------------------------------
    def boot(self, process):
        """Takes on the `python` context, whose kernel `process` main() started
        before the supervisor's modules were loaded; `ready` goes out when it
        is ready."""
        self.start_context(DEFAULT_CONTEXT, "python", None, None, self.booted, process)

    def booted(self, ok, body):
        if not ok:
            # Also on the sandbox's stderr: the host's diagnostics of a failed start.
            os.write(2, (body["message"] + "\n").encode("utf-8", "replace"))
            self.log(body["message"])
            self.terminate(mirror_status(body.get("exitCode"), body.get("signal")) or 1)
            return
        languages = {}
        path = self.kernel_env.get("PATH", "")
        for language, kernel in self.kernels.items():
            if language_available(kernel, path):
                languages[language] = body["version"] if language == "python" else None
        self.send({"type": "ready", "protocolVersion": PROTOCOL_VERSION, "pid": os.getpid(), "python": body["version"], "languages": languages, "statePipes": True})

    def start_context(self, context_id, language, cwd, env, on_start, process=None):
        kernel = self.kernels.get(language) if isinstance(language, str) else None
        if kernel is None or not language_available(kernel, self.kernel_env.get("PATH", "")):
            raise RequestError("language-unavailable", "the language %r is not available in this sandbox" % (language,))
        context = Context(self, context_id, language, kernel, resolve_cwd(cwd), merge_env(self.kernel_env, env))
        self.contexts[context_id] = context

        def started(ok, body):
            if not ok and self.contexts.get(context_id) is context and context.state != "ready":
                del self.contexts[context_id]
            on_start(ok, body)

        context.start(started, process)

    def route(self, kind, message, line):
        context_id = message.get("context", DEFAULT_CONTEXT)
        context = self.contexts.get(context_id) if isinstance(context_id, str) else None
        if context is not None and context.state in ("starting", "ready"):
            context.send(kind, message, line)
            return
        if context is None:
            error = RequestError("unknown-context", "there is no context %r in this session" % (context_id,))
        else:
            error = RequestError("context-exited", "the kernel of context %r has ended; restart it (context-restart)" % (context_id,))
        if kind == "execute":
            tag = {"context": context_id} if isinstance(context_id, str) else {}
            self.send({"type": "error", "id": message.get("id"), "name": "ContextError", "value": str(error), "traceback": [], **tag})
            self.send({"type": "execution-end", "id": message.get("id"), "status": "error", "executionCount": None, "outputTruncated": False, **tag})
        elif kind != "interrupt":
            raise error

    def context_create(self, message):
        context_id = message.get("context")
        check_id(context_id, "context")
        if context_id in self.contexts:
            raise RequestError("context-exists", "a context %r exists already" % (context_id,))

        def started(ok, body):
            self.answer_start(message, context_id, ok, body)

        self.start_context(context_id, message.get("language"), message.get("cwd"), message.get("env"), started)

    def answer_start(self, message, context_id, ok, body):
        if ok:
            self.reply(message, body)
        else:
            self.log(body["message"])
            self.reply(message, error=RequestError(body["code"], body["message"]))

    def context_restart(self, message):
        context = self.existing_context(message)

        def started(ok, body):
            self.answer_start(message, context.id, ok, body)

        context.restart(started)

    def context_remove(self, message):
        context = self.existing_context(message)
        del self.contexts[context.id]
        context.kill(lambda: self.reply(message))

    def existing_context(self, message):
        context_id = message.get("context")
        context = self.contexts.get(context_id) if isinstance(context_id, str) else None
        if context is None:
            raise RequestError("unknown-context", "there is no context %r in this session" % (context_id,))
        return context

    def context_exited(self, context, code, signal_name):
        if self.legacy and context.id == DEFAULT_CONTEXT:
            self.terminate(mirror_status(code, signal_name))
        self.send({"type": "context-exit", "context": context.id, "code": code, "signal": signal_name})

    def kernel_line_refused(self, context, line):
        if self.legacy and context.id == DEFAULT_CONTEXT and context.state == "ready":
            self.send_parts(line, b"\n")
            return
        self.log("context %s: its kernel sent a line that is not a protocol message; dropped" % context.id)

    # --- commands -----------------------------------------------------------
    def command_start(self, message):
        command_id = message.get("id")
        check_id(command_id, "command")
        if command_id in self.commands:
            self.log("command-start: a command %r is running already; the request was ignored" % command_id)
            return
        text = message.get("command")
        if not isinstance(text, str) or "\0" in text:
            raise RequestError("invalid-request", "command must be a string without NUL bytes")
        command = Command(self, command_id, text, resolve_cwd(message.get("cwd")), merge_env(self.command_env, message.get("env")), message.get("stdin") is True)
        error = command.start()
        if error is not None:
            raise RequestError(error["code"], error["message"])
        self.commands[command_id] = command
        self.send({"type": "command-started", "id": command_id, "pid": command.pid})

    def command_ended(self, command):
        self.commands.pop(command.id, None)
        try:
            os.killpg(command.pid, 0)
            self.ended_groups.append(command.pid)  # a background grandchild lives on: end it with the sandbox
        except OSError:
            pass

    def command_stdin(self, message):
        command = self.commands.get(message.get("id"))
        data = message.get("data", "")
        if command is not None and isinstance(data, str):
            command.write_stdin(data, message.get("eof") is True)

    def command_signal(self, message):
        command = self.commands.get(message.get("id"))
        number = SIGNALS.get(message.get("signal"))
        if number is None:
            raise RequestError("invalid-request", "signal must be one of %s" % ", ".join(sorted(SIGNALS)))
        if command is not None:
            command.signal(number)

    def command_list(self, message):
        self.reply(message, {"commands": [command.describe() for command in self.commands.values()]})

    def liveness(self, message):
        """The host's liveness check, answered from this loop whatever the kernels do: that the supervisor
        is there, and which contexts' kernels are stopped (SIGSTOP: they answer nothing until resumed)."""
        stopped = [context.id for context in self.contexts.values() if context.pid is not None and process_stopped(context.pid)]
        self.reply(message, {"stopped": stopped})

    # --- snapshots --------------------------------------------------------------
    def state_begin(self, message):
        mode = message.get("mode")
        if mode not in ("save", "load"):
            raise RequestError("invalid-request", "state-begin: mode must be save or load")
        self.end_archive()
        try:
            self.archive = sandcell_state.Archive(self.loop, mode, "tar", self.bash, self.command_env, message.get("clean") is True)
        except sandcell_state.StateError as error:
            raise RequestError(error.code, str(error)) from None
        except OSError as error:
            raise RequestError("state-failed", "the state directory could not be made: %s" % error) from None
        self.reply(message, {"directory": sandcell_state.STATE_DIR})

    def state_pipe(self, message):
        """A context's state streamed through a pipe, after the archive of the files (a fork: sandcell_state.Pipe)."""
        mode = message.get("mode")
        if mode not in ("save", "load"):
            raise RequestError("invalid-request", "state-pipe: mode must be save or load")
        if self.archive is None:
            raise RequestError("invalid-request", "state-pipe: no archive was begun (state-begin)")
        self.end_archive()
        try:
            self.archive = sandcell_state.Pipe(self.loop, mode, message.get("name"))
        except sandcell_state.StateError as error:
            raise RequestError(error.code, str(error)) from None
        self.reply(message, {"path": self.archive.path})

    def state_read(self, message):
        offset = message.get("offset")
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise RequestError("invalid-request", "state-read: offset must be an integer")
        self.archive_call(message, lambda archive, reply, fail: archive.read(offset, reply, fail))

    def state_write(self, message):
        data = message.get("data")
        if not isinstance(data, (bytes, bytearray)):
            raise RequestError("invalid-request", "state-write: bytes must be the length of the frame after the line, at most %d" % sandcell_state.CHUNK_BYTES)
        eof = message.get("eof") is True
        self.archive_call(message, lambda archive, reply, fail: archive.write(data, eof, reply, fail))

    def archive_call(self, message, call):
        if self.archive is None:
            raise RequestError("invalid-request", "%s: no archive was begun (state-begin)" % message.get("type"))

        def fail(error):
            self.reply(message, error=RequestError(error.code, str(error)))

        try:
            call(self.archive, lambda body, frame=None: self.reply(message, body, frame=frame), fail)
        except sandcell_state.StateError as error:
            raise RequestError(error.code, str(error)) from None

    def state_end(self, message):
        self.end_archive()
        sandcell_state.remove_state_directory()
        self.reply(message)

    def end_archive(self):
        archive, self.archive = self.archive, None
        if archive is not None:
            archive.close()

    # --- files and the end ----------------------------------------------------
    def file_request(self, message):
        import sandcell_files

        sandcell_files.FILE_LIMIT = self.file_limit
        answer, frame = sandcell_files.reply(message)
        self.send(answer)
        if frame:
            self.send_parts(frame)

    def terminate(self, status):
        """Ends everything this sandbox started, then the supervisor."""
        if self.outgoing:
            parts, self.outgoing = self.outgoing, []
            try:
                write_all(1, parts)
            except OSError:
                pass
        for context in self.contexts.values():
            if context.state != "exited":
                kill_group(context.pid)
        for command in self.commands.values():
            kill_group(command.pid)
        for terminal in self.terminals.values():
            terminal.close()
        for group in self.ended_groups:
            kill_group(group)
        if self.archive is not None and self.archive.pid is not None:
            kill_group(self.archive.pid)
        os._exit(status)


HANDLERS = {
    "context-create": Supervisor.context_create,
    "context-restart": Supervisor.context_restart,
    "context-remove": Supervisor.context_remove,
    "command-start": Supervisor.command_start,
    "command-stdin": Supervisor.command_stdin,
    "command-signal": Supervisor.command_signal,
    "command-list": Supervisor.command_list,
    "liveness": Supervisor.liveness,
    "state-begin": Supervisor.state_begin,
    "state-pipe": Supervisor.state_pipe,
    "state-read": Supervisor.state_read,
    "state-write": Supervisor.state_write,
    "state-end": Supervisor.state_end,
    "port-connect": lambda supervisor, message: ports().port_connect(supervisor, message),
    "port-list": lambda supervisor, message: ports().port_list(supervisor, message),
}
TERMINAL_REQUESTS = ("terminal-open", "terminal-input", "terminal-resize", "terminal-ack", "terminal-signal", "terminal-close", "terminal-list")
for _kind in TERMINAL_REQUESTS:
    HANDLERS[_kind] = lambda supervisor, message, name=_kind.replace("-", "_"): getattr(terminals(), name)(supervisor, message)


def ports():
    """sandcell_ports, loaded by the first request for a port: its imports are no cold start's."""
    import sandcell_ports

    return sandcell_ports


def terminals():
    """sandcell_terminals, loaded by the first terminal request."""
    import sandcell_terminals

    return sandcell_terminals


def process_stopped(pid):
    """Whether a process is stopped by a signal (state T in /proc; a tracer's stop, t, is the tracer's business)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"T"


def check_id(value, what):
    if not isinstance(value, str) or not ID_PATTERN.match(value):
        raise RequestError("invalid-request", "a %s id is 1-64 characters of A-Z a-z 0-9 _ . - (got %r)" % (what, value))


def resolve_cwd(value):
    """The working directory: /mnt/data by default, relative paths under it."""
    if value is None or value == "":
        return DATA_DIR
    if not isinstance(value, str) or "\0" in value:
        raise RequestError("invalid-request", "cwd must be a path without NUL bytes")
    return value if value.startswith("/") else DATA_DIR + "/" + value


def merge_env(base, extra):
    if extra is None:
        return base
    if not isinstance(extra, dict):
        raise RequestError("invalid-request", "env must be an object of strings")
    env = dict(base)
    for name, value in extra.items():
        if not name or "=" in name or "\0" in name or not isinstance(value, str) or "\0" in value:
            raise RequestError("invalid-request", "env: %r is not a valid variable (name without = or NUL, a string value without NUL)" % (name,))
        env[name] = value
    return env


def mirror_status(code, signal_name):
    """The exit status that tells the host what the kernel's end was (128 + signal, as bwrap reports)."""
    if signal_name is not None:
        number = getattr(signal, signal_name, None)
        return 128 + int(number) if number is not None else 1
    return code if code is not None else 1
