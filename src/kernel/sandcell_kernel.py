"""sandcell's Python kernel: the `python` contexts of a sandbox, started by
the supervisor (sandcell_supervisor.py), which owns the host channel.

Protocol (version 2, docs/kernel-protocol.md): newline-delimited JSON. The
supervisor writes requests to our stdin and reads events from our stdout. At
start-up the protocol moves to private descriptors, and descriptors 0/1/2 are
replaced by /dev/null and two pipes, so that anything written straight to fd 1
or 2 (os.system, subprocess, C extensions) is captured as stream output and
can never corrupt the channel. Until then, fd 2 is how a failed start is told.

Threads:
- main thread: runs code (IPython InteractiveShell), one request at a time;
- control thread: reads requests; handles interrupt / shutdown / is-complete
  at once, even while user code is busy (complete and inspect wait their turn
  on the main thread, as a Jupyter kernel answers shell requests in order:
  they read the user's namespace, which only the main thread may touch);
- one reader thread per captured descriptor, and a flusher that sends
  buffered stream output at least every FLUSH_INTERVAL_S.

Exit: SystemExit (sys.exit(n), exit(), quit(), argparse's exits) stops the
code but keeps the kernel and its state; the status goes out as
execution-end's `exitStatus` by CPython's rule (None 0, an int modulo 256,
anything else 1), and a non-zero one is also the run's error. Output is capped
at the source (sandcell_kernel_output.py), so an honest kernel never sends an
oversized message. Code containing NUL is a SyntaxError rather than an
escaped ValueError that would end the kernel.
"""

import base64
import contextlib
import json
import os
import queue
import signal
import sys
import threading
import time

PROTOCOL_VERSION = 2
FLUSH_INTERVAL_S = 0.05
# The images among these, and how the host carries each: src/protocol/images.ts.
MIME_TYPES = (
    "text/plain",
    "text/html",
    "text/markdown",
    "text/latex",
    "image/png",
    "image/jpeg",
    "image/svg+xml",
    "application/json",
)

def _read_options():
    raw = os.environ.pop("SANDCELL_KERNEL_OPTIONS", "{}")
    try:
        return json.loads(raw)
    except ValueError:
        return {}


# An error's name, in UTF-8 bytes: the same bound the host applies
# (src/session/output-limits.ts), so an honest error is never cut twice.
ERROR_NAME_LIMIT = 1024


def configure(options):
    """Takes the session's options: read from the environment when the kernel
    starts, or by a kernel forked from a template (sandcell_zygote.py), which
    loaded this module before any session existed."""
    global OPTIONS, OUTPUT_LIMIT, RESULT_LIMIT, METADATA_LIMIT, ERROR_VALUE_LIMIT, ERROR_TRACEBACK_LIMIT
    OPTIONS = options
    OUTPUT_LIMIT = int(options.get("outputBytes", 1 << 20))
    RESULT_LIMIT = int(options.get("resultBytes", 32 << 20))
    # Jupyter metadata is a few keys (image sizes, flags); past this a result
    # keeps its data and loses its metadata.
    METADATA_LIMIT = min(1 << 20, RESULT_LIMIT)
    # An error's value and traceback: bounded as the host bounds them.
    ERROR_VALUE_LIMIT = OUTPUT_LIMIT
    ERROR_TRACEBACK_LIMIT = OUTPUT_LIMIT


configure(_read_options())

# An input() prompt, in UTF-8 bytes (the host bounds it again).
PROMPT_LIMIT = 64 * 1024


# The siblings loaded so far, each loaded once.
SIBLINGS = {}


def load_sibling(name):
    """A module beside this file, loaded by path: the kernel runs isolated
    (-I), so its directory is not on sys.path, and stays off it so that user
    code never imports sandcell's modules by accident."""
    module = SIBLINGS.get(name)
    if module is not None:
        return module
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    SIBLINGS[name] = module
    return module


_output = load_sibling("sandcell_kernel_output")
Channel = _output.Channel
StreamBuffer = _output.StreamBuffer
TextStream = _output.TextStream
DescriptorCapture = _output.DescriptorCapture
bundle_size = _output.bundle_size
bounded_metadata = _output.bounded_metadata
cut_text = _output.cut_text
cut_traceback = _output.cut_traceback
OutputBudget = load_sibling("sandcell_output").OutputBudget


def is_complete(message):
    from IPython.core.inputtransformer2 import TransformerManager

    status, indent = TransformerManager().check_complete(message.get("code", ""))
    return {"status": status, "indent": indent or 0}


assistant = None


CONTROL_HANDLERS = {
    "is-complete": is_complete,
}
# Requests answered in order on the main thread, behind the running execution.
MAIN_THREAD_REQUESTS = frozenset(("execute", "reset", "ping", "complete", "inspect", "state-save", "state-load"))


class Kernel:
    def __init__(self, channel, proto_in):
        self.requests = queue.Queue()
        self.attach(channel, proto_in)
        self.current = None
        self.current_lock = threading.Lock()
        self.results_used = 0
        self.shell = None
        self.captures = []
        # input-reply messages, put here by the control thread for input() on the main thread.
        self.input_replies = queue.Queue()
        try:
            import ctypes

            self.libc = ctypes.CDLL(None)
        except Exception:
            self.libc = None

    # --- set-up -----------------------------------------------------------
    def attach(self, channel, proto_in):
        """Takes the session's channel: at once, or in a kernel a template
        prepared before any session existed (prepare()), when its fork
        starts. The output budget is the session's (configure())."""
        self.channel = channel
        self.proto_in = proto_in
        # Shared by stdout and stderr, whose buffers flush from several threads.
        self.budget = OutputBudget(OUTPUT_LIMIT, threading.Lock())
        self.stdout = StreamBuffer(channel, self.budget, "stdout")
        self.stderr = StreamBuffer(channel, self.budget, "stderr")

    def capture_descriptors(self):
        marker = b"\x00sandcell-sync-" + os.urandom(8).hex().encode("ascii") + b"\x00"
        self.sync_marker = marker
        for fd, buffer in ((1, self.stdout), (2, self.stderr)):
            read_end, write_end = os.pipe()
            os.set_inheritable(read_end, False)
            os.dup2(write_end, fd)
            os.close(write_end)
            self.captures.append((fd, DescriptorCapture(read_end, buffer, marker)))
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = TextStream(self.stdout, 1)
        sys.stderr = TextStream(self.stderr, 2)
        sys.__stdout__ = sys.stdout
        sys.__stderr__ = sys.stderr

    def start_shell(self):
        self.shell = load_sibling("sandcell_python_shell").create_shell(self, MIME_TYPES)

    # --- output ----------------------------------------------------------
    def execution_id(self):
        current = self.current
        return current["id"] if current else None

    def emit_output(self, kind, data, metadata):
        execution_id = self.execution_id()
        if execution_id is None:
            return
        self.stdout.flush()
        self.stderr.flush()
        bundle = {}
        for mime, value in (data or {}).items():
            if mime not in MIME_TYPES:
                continue
            if isinstance(value, bytes):
                value = base64.b64encode(value).decode("ascii")
            bundle[mime] = value
        if not bundle:
            return
        # Results past the per-execution budget are dropped here, so that a huge
        # HTML table or image never becomes an oversized protocol message. The
        # budget counts whole protocol lines (data, metadata, framing), as the
        # host does; the data's size is a cheap lower bound checked first.
        if self.results_used + bundle_size(bundle) > RESULT_LIMIT:
            self.budget.truncated = True
            return
        kept_metadata = bounded_metadata(metadata, METADATA_LIMIT)
        if kept_metadata is None:
            kept_metadata = {}
            self.budget.truncated = True
        message = {"type": kind, "id": execution_id, "data": bundle, "metadata": kept_metadata}
        if kind == "result":
            message["executionCount"] = self.shell.execution_count
        line = self.channel.encode(message)
        if self.results_used + len(line) > RESULT_LIMIT:
            self.budget.truncated = True
            return
        self.results_used += len(line)
        # The cell's value comes last: it goes out with what follows it (its end, as a rule).
        if kind == "result":
            self.channel.hold(line)
        else:
            self.channel.write(line)

    def emit_error(self, etype, evalue, stb):
        execution_id = self.execution_id()
        self.stdout.flush()
        self.stderr.flush()
        name = getattr(etype, "__name__", str(etype))
        try:
            value = str(evalue)
        except Exception:
            value = "<unprintable %s>" % name
        if self.current is not None:
            self.current["error"] = True
        if execution_id is None:
            return
        # Cut here, so that an error with a huge message never becomes an
        # oversized protocol message (the host cuts again if it must).
        name, name_cut = cut_text(name, ERROR_NAME_LIMIT, "error name")
        value, value_cut = cut_text(value, ERROR_VALUE_LIMIT, "error value")
        traceback, traceback_cut = cut_traceback([str(entry) for entry in stb], ERROR_TRACEBACK_LIMIT)
        if name_cut or value_cut or traceback_cut:
            self.budget.truncated = True
        self.channel.send({"type": "error", "id": execution_id, "name": name, "value": value, "traceback": traceback})

    def code_exited(self, code):
        """The code raised SystemExit(code): the status it ends a script with,
        by CPython's rule (None is 0, an int is itself modulo 256, anything
        else is 1), kept for the execution's end."""
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code & 0xFF
        else:
            status = 1
        if self.current is not None:
            self.current["exitStatus"] = status
        return status

    def emit_syntax_error(self, message, code, offset):
        """Reports code that cannot be compiled as IPython reports a SyntaxError."""
        before = code[:offset]
        line = before.count("\n") + 1
        column = offset - (before.rfind("\n") + 1) + 1
        text = code.split("\n")[line - 1]
        try:
            raise SyntaxError(message, ("<cell>", line, column, text))
        except SyntaxError:
            self.shell.showsyntaxerror()

    # --- threads ----------------------------------------------------------
    def control_loop(self):
        for line in self.proto_in:
            try:
                message = json.loads(line)
            except ValueError:
                self.channel.send({"type": "protocol-error", "message": "invalid JSON request"})
                continue
            kind = message.get("type")
            if kind == "interrupt":
                self.interrupt(message.get("id"))
            elif kind == "shutdown":
                os._exit(0)
            elif kind == "input-reply":
                self.input_replies.put(message)
            elif kind in CONTROL_HANDLERS:
                self.reply(message, CONTROL_HANDLERS[kind])
            elif kind in MAIN_THREAD_REQUESTS:
                self.requests.put(message)
            else:
                self.channel.send({"type": "reply", "id": message.get("id"), "ok": False, "error": {"code": "unknown-request", "message": "unknown request type %r" % kind}})
        os._exit(0)  # the host closed our stdin: it is gone

    def reply(self, message, handler):
        try:
            body = handler(message)
            body.update({"type": "reply", "id": message.get("id"), "ok": True})
        except Exception as error:  # never let a bad request kill the control thread
            body = {"type": "reply", "id": message.get("id"), "ok": False, "error": {"code": "internal", "message": "%s: %s" % (type(error).__name__, error)}}
        self.channel.send(body)

    def interrupt(self, execution_id):
        with self.current_lock:
            current = self.current
            if current is None or (execution_id is not None and current["id"] != execution_id):
                return
            current["interrupted"] = True
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def flusher_loop(self):
        while True:
            time.sleep(FLUSH_INTERVAL_S)
            try:
                self.stdout.flush()
                self.stderr.flush()
                self.channel.release_held()
            except Exception:
                pass

    # --- main thread -------------------------------------------------------
    def sync_descriptors(self):
        """Waits until what was written to fd 1/2 before now has been sent:
        at once when the pipe is drained (as a rule), else a marker goes down
        the pipe and its reader signals when it sees it."""
        if self.libc is not None:
            self.libc.fflush(None)
        waiting = []
        for fd, capture in self.captures:
            if capture.drained():
                continue
            capture.synced.clear()
            try:
                os.write(fd, self.sync_marker)
                waiting.append(capture)
            except OSError:
                continue  # the user code closed or replaced the descriptor
        for capture in waiting:
            capture.synced.wait(0.5)

    def assist(self, message):
        """Answers complete or inspect (sandcell_python_assist.py)."""
        global assistant
        if assistant is None:
            assistant = load_sibling("sandcell_python_assist")
        code = message.get("code")
        code = code if isinstance(code, str) else ""
        cursor = message.get("cursorPos")
        if message.get("type") == "complete":
            return assistant.complete(self.shell, code, cursor)
        return assistant.inspect(self.shell, code, cursor, message.get("detailLevel"))

    @contextlib.contextmanager
    def stdin_hooks(self, allowed):
        """While an execution whose host answers input runs, input() and
        getpass() ask the host (input-request) and wait for its input-reply;
        otherwise they read fd 0, /dev/null, and raise EOFError as ever."""
        if not allowed:
            yield
            return
        import builtins
        import getpass

        def ask_line(prompt=""):
            __tracebackhide__ = True  # not the user's frame: IPython's traceback skips it
            return self.ask_host(prompt, False)

        def ask_password(prompt="Password: ", stream=None):
            __tracebackhide__ = True
            return self.ask_host(prompt, True)

        saved = (builtins.input, getpass.getpass)
        builtins.input = ask_line
        getpass.getpass = ask_password
        try:
            yield
        finally:
            builtins.input, getpass.getpass = saved

    def ask_host(self, prompt, password):
        """One line of input from the host. Waiting on the queue is
        interruptible: the host's interrupt (or its timeout's) ends the wait
        with KeyboardInterrupt, so a request nobody answers cannot wedge us."""
        __tracebackhide__ = True
        execution_id = self.execution_id()
        if execution_id is None:
            raise EOFError("EOF when reading a line")
        self.stdout.flush()
        self.stderr.flush()
        while not self.input_replies.empty():
            self.input_replies.get_nowait()  # answers to an earlier, interrupted request
        prompt, _ = cut_text(str(prompt), PROMPT_LIMIT, "prompt")
        self.channel.send({"type": "input-request", "id": execution_id, "prompt": prompt, "password": bool(password)})
        try:
            while True:
                reply = self.input_replies.get()
                if reply.get("id") == execution_id:
                    break
        except KeyboardInterrupt:
            # Raised anew here: its traceback is the user's input() and this line, not queue's and threading's frames.
            raise KeyboardInterrupt from None
        value = reply.get("value")
        if reply.get("cancelled") is True or not isinstance(value, str):
            raise EOFError("no input was given")
        return value

    def run_request(self, message):
        kind = message.get("type")
        if kind in ("complete", "inspect"):
            try:
                self.reply(message, self.assist)
            except KeyboardInterrupt:
                # An interrupt meant for an execution that had just ended.
                self.channel.send({"type": "reply", "id": message.get("id"), "ok": False, "error": {"code": "interrupted", "message": "interrupted"}})
            return
        if kind == "ping":
            self.channel.send({"type": "reply", "id": message.get("id"), "ok": True})
            return
        if kind in ("state-save", "state-load"):
            self.channel.send(self.state_request(message))
            return
        if kind == "reset":
            self.shell.reset(new_session=True)
            self.shell.execution_count = 1
            self.channel.send({"type": "reply", "id": message.get("id"), "ok": True})
            return
        code = message.get("code", "")
        self.budget.reset()
        self.results_used = 0
        with self.current_lock:
            self.current = {"id": message["id"], "error": False, "interrupted": False}
        self.stdout.execution_id = self.stderr.execution_id = message["id"]
        try:
            if "\x00" in code:
                # compile() refuses NUL with a ValueError that this IPython lets
                # escape run_cell; it is an error in the user's code, like any
                # other that stops it compiling.
                self.shell.execution_count += 1
                self.emit_syntax_error("source code cannot contain null bytes", code, code.index("\x00"))
            else:
                with self.stdin_hooks(message.get("stdin") is True):
                    self.shell.run_cell(code, store_history=True)
        except KeyboardInterrupt:
            # An interrupt that landed outside user code (in IPython itself).
            self.emit_error(KeyboardInterrupt, KeyboardInterrupt(), ["KeyboardInterrupt"])
        except Exception as error:
            # A failure inside IPython itself must not end the kernel (and the
            # session's state with it): report it as this run's error.
            import traceback

            self.emit_error(type(error), error, traceback.format_exception(error))
        finally:
            with self.current_lock:
                current = self.current
                self.current = None
        try:
            self.sync_descriptors()
        except KeyboardInterrupt:
            pass
        self.stdout.flush()
        self.stderr.flush()
        end = {
            "type": "execution-end",
            "id": message["id"],
            "status": "error" if current["error"] else "ok",
            "executionCount": self.shell.execution_count - 1,
            "outputTruncated": self.budget.truncated,
        }
        if "exitStatus" in current:
            end["exitStatus"] = current["exitStatus"]
        self.stdout.execution_id = self.stderr.execution_id = None
        self.channel.send(end)

    def state_request(self, message):
        """A snapshot's state-save or state-load: the user's namespace written to
        or read from the file at `path` (sandcell_python_state.py), as a reply."""
        answer = {"type": "reply", "id": message.get("id"), "ok": False}
        path = message.get("path")
        if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
            answer["error"] = {"code": "invalid-request", "message": "path must be an absolute path"}
            return answer
        state = load_sibling("sandcell_python_state")
        try:
            if message["type"] == "state-save":
                baseline = state.Baseline(*self.baseline)
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
                with open(descriptor, "wb", buffering=1 << 20) as out:
                    report = state.save(self.shell.user_module, baseline, self.shell.execution_count - 1, out)
                report["executionCount"] = self.shell.execution_count - 1
            else:
                with open(path, "rb", buffering=1 << 20) as source:
                    report = state.load(source, self.shell.user_module)
                self.shell.execution_count = int(report["executionCount"]) + 1
        except state.NotAState as error:
            answer["error"] = {"code": "state-invalid", "message": str(error)}
            return answer
        except (Exception, KeyboardInterrupt) as error:
            answer["error"] = {"code": "state-failed", "message": "%s: %s" % (type(error).__name__, error)}
            return answer
        answer.update(report, ok=True)
        return answer

    def main_loop(self):
        while True:
            try:
                message = self.requests.get()
                self.run_request(message)
            except KeyboardInterrupt:
                # A late interrupt for an execution that already ended.
                continue


def main():
    # Until the kernel is ready, fd 2 is how it tells the supervisor why it
    # could not start; capture_descriptors replaces fd 2, so keep it aside.
    startup_errors = os.dup(2)
    os.set_inheritable(startup_errors, False)
    try:
        kernel = start()
    except BaseException:
        import traceback

        os.write(startup_errors, traceback.format_exc().encode("utf-8", "replace"))
        os._exit(1)
    os.close(startup_errors)
    kernel.main_loop()


# The kernel and its shell made by a template before any session (prepare()), which start() takes over.
PREPARED = None


def prepare():
    """In a session template (sandcell_zygote.py): the kernel object and its
    IPython shell, made once, so that every fork shares their pages until it
    writes to them, and starts with its shell made. No thread is started and
    nothing is opened: the template forks."""
    global PREPARED
    kernel = Kernel(None, None)
    kernel.start_shell()
    kernel.shell.run_cell("None", store_history=False, silent=True)
    # What a session loads at its start (the user site) or on its first snapshot or completion: loaded in a
    # session, each would be pages of that session's alone.
    for name in ("sandcell_user_site", "sandcell_python_state", "sandcell_python_assist"):
        load_sibling(name)
    PREPARED = kernel


def start():
    proto_out = os.dup(1)
    proto_in_fd = os.dup(0)
    os.set_inheritable(proto_out, False)
    os.set_inheritable(proto_in_fd, False)
    channel = Channel(proto_out)
    proto_in = os.fdopen(proto_in_fd, "rb", buffering=1 << 16)
    kernel = PREPARED
    if kernel is None:
        kernel = Kernel(channel, proto_in)
    else:
        kernel.attach(channel, proto_in)
    kernel.capture_descriptors()
    load_sibling("sandcell_user_site").add_to_path()
    if kernel.shell is None:
        kernel.start_shell()
    else:
        # IPython's directory history began where the template was.
        kernel.shell.user_ns["_dh"][:] = [os.getcwd()]
    # An environment's warm imports are `import NAME` run before the first cell: the module is loaded
    # and its top-level name bound in the user's namespace (`import a.b` binds `a`).
    for name in OPTIONS.get("warmImports", []):
        try:
            kernel.shell.user_ns[name.partition(".")[0]] = __import__(name)
        except Exception as error:  # the session still starts; the name is then undefined, as after a failed import
            channel.send({"type": "log", "message": "warm import of %s failed: %s" % (name, error)})
    # The session's preload only warms the module cache: nothing is bound, the user still imports.
    for name in OPTIONS.get("preloadModules", []):
        try:
            __import__(name)
        except Exception as error:  # a missing optional package must not stop the kernel
            channel.send({"type": "log", "message": "preload of %s failed: %s" % (name, error)})
    # One silent cell walks IPython's execution path once, so the user's first
    # run costs what every later one does (a template's kernel walked it before the fork).
    if PREPARED is None:
        kernel.shell.run_cell("None", store_history=False, silent=True)
    # What a snapshot leaves out: everything bound before the user's first cell.
    kernel.baseline = (dict(kernel.shell.user_ns), dict(os.environ), list(sys.path))
    threading.Thread(target=kernel.control_loop, name="control", daemon=True).start()
    threading.Thread(target=kernel.flusher_loop, name="flusher", daemon=True).start()
    version = sys.version.split()[0]
    channel.send({"type": "ready", "protocolVersion": PROTOCOL_VERSION, "language": "python", "version": version, "python": version, "pid": os.getpid()})
    return kernel


if __name__ == "__main__":
    main()
