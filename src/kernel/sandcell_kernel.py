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
STREAM_CHUNK_BYTES = 8192
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

PLAIN_TYPES = (int, float, bool, complex, str, bytes, type(None))


def _read_options():
    raw = os.environ.pop("SANDCELL_KERNEL_OPTIONS", "{}")
    try:
        return json.loads(raw)
    except ValueError:
        return {}


OPTIONS = _read_options()
OUTPUT_LIMIT = int(OPTIONS.get("outputBytes", 1 << 20))
RESULT_LIMIT = int(OPTIONS.get("resultBytes", 32 << 20))
# Jupyter metadata is a few keys (image sizes, flags); past this a result
# keeps its data and loses its metadata.
METADATA_LIMIT = min(1 << 20, RESULT_LIMIT)
# An error's parts, in UTF-8 bytes: the same bounds the host applies
# (src/session/output-limits.ts), so an honest error is never cut twice.
ERROR_NAME_LIMIT = 1024
ERROR_VALUE_LIMIT = OUTPUT_LIMIT
ERROR_TRACEBACK_LIMIT = OUTPUT_LIMIT
TRACEBACK_NOTE_BYTES = 200
# An input() prompt, in UTF-8 bytes (the host bounds it again).
PROMPT_LIMIT = 64 * 1024


class Channel:
    """Sends protocol messages on the private descriptor; thread-safe."""

    def __init__(self, fd):
        self._fd = fd
        self._lock = threading.Lock()

    @staticmethod
    def encode(message):
        """The message as one protocol line; its length is what the host counts."""
        # ensure_ascii keeps the line valid UTF-8 whatever the user code printed.
        return (json.dumps(message, ensure_ascii=True, default=str) + "\n").encode("ascii")

    def send(self, message):
        self.write(self.encode(message))

    def write(self, data):
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]


class OutputBudget:
    """Bytes of stdout+stderr one execution may send; the rest is dropped."""

    def __init__(self, limit):
        self.limit = limit
        self.used = 0
        self.truncated = False
        self.lock = threading.Lock()

    def reset(self):
        with self.lock:
            self.used = 0
            self.truncated = False

    def take(self, text):
        with self.lock:
            size = len(text.encode("utf-8", "surrogatepass"))
            if self.used + size <= self.limit:
                self.used += size
                return text
            room = self.limit - self.used
            self.used = self.limit
            self.truncated = True
            if room <= 0:
                return ""
            return text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")


class StreamBuffer:
    """Collects one stream's text and sends it in chunks, so a loop of small
    prints costs a few messages rather than one per call."""

    def __init__(self, channel, budget, name):
        self.channel = channel
        self.budget = budget
        self.name = name
        self.parts = []
        self.size = 0
        self.lock = threading.Lock()
        self.execution_id = None

    def write(self, text):
        if not text:
            return
        with self.lock:
            self.parts.append(text)
            self.size += len(text)
            if self.size >= STREAM_CHUNK_BYTES:
                self._flush_locked()

    def flush(self):
        with self.lock:
            self._flush_locked()

    def _flush_locked(self):
        if not self.parts:
            return
        text = "".join(self.parts)
        self.parts = []
        self.size = 0
        text = self.budget.take(text)
        if text and self.execution_id is not None:
            self.channel.send({"type": "stream", "id": self.execution_id, "name": self.name, "text": text})


class TextStream:
    """What sys.stdout / sys.stderr become inside the kernel."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, buffer, fileno):
        self._buffer = buffer
        self._fileno = fileno

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self._buffer.write(text)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._buffer.flush()

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    def fileno(self):
        return self._fileno

    @property
    def closed(self):
        return False


class DescriptorCapture:
    """Reads one of the redirected descriptors (1 or 2) and forwards it."""

    def __init__(self, fd, buffer, marker):
        import codecs

        self.read_fd = fd
        self.buffer = buffer
        self.marker = marker
        self.synced = threading.Event()
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.pending = b""
        thread = threading.Thread(target=self._run, name="capture-%d" % fd, daemon=True)
        thread.start()

    def _run(self):
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except InterruptedError:
                continue
            if not chunk:
                return
            data = self.pending + chunk
            self.pending = b""
            while True:
                index = data.find(self.marker)
                if index < 0:
                    break
                self._forward(data[:index])
                data = data[index + len(self.marker) :]
                self.buffer.flush()
                self.synced.set()
            # Keep a possible partial marker for the next read.
            keep = 0
            for size in range(min(len(self.marker) - 1, len(data)), 0, -1):
                if self.marker.startswith(data[-size:]):
                    keep = size
                    break
            if keep:
                self.pending = data[-keep:]
                data = data[:-keep]
            self._forward(data)

    def _forward(self, data):
        if data:
            self.buffer.write(self.decoder.decode(data))


def bundle_size(bundle):
    """Roughly the bytes a MIME bundle takes on the wire, without serialising
    its (often large, base64) strings a second time."""
    return sum(len(value) if isinstance(value, str) else len(json.dumps(value, default=str)) for value in bundle.values())


def exceeds_json_size(value, limit):
    """Whether value's JSON surely takes more than limit bytes, judged without
    serialising it: every string counts its length, every other item one byte.
    A huge string in metadata is found at once instead of encoded first."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
            total += 1
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
            total += 1
        else:
            total += 1
        if total > limit:
            return True
    return False


def bounded_metadata(metadata):
    """The metadata, or None when its JSON is over METADATA_LIMIT or cannot be
    serialised (the result then goes out with empty metadata)."""
    if not metadata:
        return {}
    if not isinstance(metadata, dict) or exceeds_json_size(metadata, METADATA_LIMIT):
        return None
    try:
        size = len(json.dumps(metadata, ensure_ascii=True, default=str))
    except (TypeError, ValueError, RecursionError):
        return None
    return metadata if size <= METADATA_LIMIT else None


def utf8_size(text):
    return len(text.encode("utf-8", "surrogatepass"))


def cut_text(text, limit, what):
    """text within limit UTF-8 bytes, a note included when it had to be cut;
    returns (text, whether it was cut). Mirrors cutText on the host."""
    # A character takes at most 4 bytes, so a short text needs no measuring.
    if len(text) * 4 <= limit or (len(text) <= limit and utf8_size(text) <= limit):
        return text, False
    note = "\n[sandcell cut this %s: %d bytes, the first %%d kept; the limit follows the session option outputBytes]" % (what, utf8_size(text))
    room = max(0, limit - len(note) - 12)
    head = text[:room].encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return head + note % len(head.encode("utf-8", "surrogatepass")), True


def cut_traceback(entries, limit):
    """The traceback within limit bytes; returns (entries, whether it was cut).
    The last entry names the error (and repeats its value) and the innermost
    frames say where it happened, so entries are kept from the end: the last
    one cut to half the limit, then whole earlier ones while they fit.
    Mirrors cutTraceback on the host."""
    sizes = [utf8_size(entry) for entry in entries]
    if sum(sizes) <= limit or not entries:
        return entries, False
    last, _ = cut_text(entries[-1], limit // 2, "traceback line")
    kept = [last]
    room = limit - utf8_size(last) - TRACEBACK_NOTE_BYTES
    index = len(entries) - 2
    while index >= 0 and sizes[index] <= room:
        kept.append(entries[index])
        room -= sizes[index]
        index -= 1
    if index >= 0:
        kept.append("[sandcell cut %d earlier traceback entries: the traceback is kept within the session option outputBytes]" % (index + 1))
    kept.reverse()
    return kept, True


def is_complete(message):
    from IPython.core.inputtransformer2 import TransformerManager

    status, indent = TransformerManager().check_complete(message.get("code", ""))
    return {"status": status, "indent": indent or 0}


assistant = None


def load_sibling(name):
    """A module beside this file, loaded by path: the kernel runs isolated
    (-I), so its directory is not on sys.path, and stays off it so that user
    code never imports sandcell's modules by accident."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONTROL_HANDLERS = {
    "is-complete": is_complete,
}


class Kernel:
    def __init__(self, channel, proto_in):
        self.channel = channel
        self.proto_in = proto_in
        self.requests = queue.Queue()
        self.budget = OutputBudget(OUTPUT_LIMIT)
        self.stdout = StreamBuffer(channel, self.budget, "stdout")
        self.stderr = StreamBuffer(channel, self.budget, "stderr")
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
        import bdb

        from IPython.core.autocall import ExitAutocall
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets import default

        kernel = self

        class HostDisplayHook(DisplayHook):
            def compute_format_data(self, result):
                # The full formatter chain costs ~0.5 ms; a plain builtin has
                # only one representation, so skip it (exact types only).
                if type(result) in PLAIN_TYPES:
                    return {"text/plain": repr(result)}, {}
                return super().compute_format_data(result)

            def start_displayhook(self):
                self._data = None

            def write_output_prompt(self):
                pass

            def write_format_data(self, format_dict, md_dict=None):
                self._data = (format_dict, md_dict or {})

            def finish_displayhook(self):
                if self._data is not None:
                    kernel.emit_output("result", self._data[0], self._data[1])
                self._data = None

        class HostDisplayPublisher(DisplayPublisher):
            def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
                kernel.emit_output("display", data, metadata or {})

            def clear_output(self, wait=False):
                pass

        class Exit(ExitAutocall):
            """`exit` and `quit`: they end the code as in a script, exit(code)
            with that status. IPython's own ask its terminal to close after
            the cell (ask_exit, which InteractiveShell lacks) and take no code."""

            def __call__(self, code=None):
                raise SystemExit(code)

            def __repr__(self):
                return "Use exit() or quit() to exit"

        class Shell(InteractiveShell):
            @default("exiter")
            def _exiter_default(self):
                return Exit(self)

            def ask_exit(self):
                raise SystemExit(None)

            async def run_code(self, code_obj, result=None, *, async_=False):
                """IPython's run_code, but for SystemExit. IPython shows one as an
                error, with a warning to use Ctrl-D meant for its own terminal;
                here it ends the code as it ends a script: the status goes to
                the host (execution-end's exitStatus), a non-zero one is shown
                as Jupyter shows it, and the kernel and its state stay."""
                # IPython's tracebacks hide the frames above this one.
                __tracebackhide__ = "__ipython_bottom__"
                old_excepthook, sys.excepthook = sys.excepthook, self.excepthook
                self.sys_excepthook = old_excepthook
                try:
                    try:
                        if async_:
                            await eval(code_obj, self.user_global_ns, self.user_ns)
                        else:
                            exec(code_obj, self.user_global_ns, self.user_ns)
                    finally:
                        sys.excepthook = old_excepthook
                except SystemExit as error:
                    if kernel.code_exited(error.code) != 0:
                        if result is not None:
                            result.error_in_exec = error
                        self.showtraceback(exception_only=True)
                    return True  # the rest of the cell does not run
                except bdb.BdbQuit:
                    if result is not None:
                        result.error_in_exec = sys.exc_info()[1]
                except self.custom_exceptions:
                    etype, value, tb = sys.exc_info()
                    if result is not None:
                        result.error_in_exec = value
                    self.CustomTB(etype, value, tb)
                except BaseException:
                    if result is not None:
                        result.error_in_exec = sys.exc_info()[1]
                    self.showtraceback(running_compiled_code=True)
                else:
                    return False
                return True

            def _showtraceback(self, etype, evalue, stb):
                kernel.emit_error(etype, evalue, stb)

            def showsyntaxerror(self, filename=None, running_compiled_code=False):
                etype, value, tb = self._get_exc_info()
                stb = self.SyntaxTB.structured_traceback(etype, value, [])
                kernel.emit_error(etype, value, stb)

        from traitlets.config import Config

        config = Config()
        # No history database: nothing written to disk, no open file behind the user's back.
        config.HistoryManager.enabled = False
        config.HistoryManager.hist_file = ":memory:"
        self.shell = Shell.instance(
            config=config,
            displayhook_class=HostDisplayHook,
            display_pub_class=HostDisplayPublisher,
            colors="NoColor",
        )
        self.shell.display_formatter.active_types = list(MIME_TYPES)
        # Plain-text tracebacks for models and terminals alike.
        self.shell.InteractiveTB.set_mode("Context")
        try:
            self.shell.InteractiveTB.color_toggle = lambda: None
        except Exception:
            pass
        self.shell.user_ns["__name__"] = "__main__"

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
        kept_metadata = bounded_metadata(metadata)
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
            elif kind in ("execute", "reset", "ping", "complete", "inspect"):
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
            except Exception:
                pass

    # --- main thread -------------------------------------------------------
    def sync_descriptors(self):
        """Waits until what was written to fd 1/2 before now has been sent:
        a marker goes down each pipe, and its reader signals when it sees it."""
        if self.libc is not None:
            self.libc.fflush(None)
        waiting = []
        for fd, capture in self.captures:
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


def start():
    proto_out = os.dup(1)
    proto_in_fd = os.dup(0)
    os.set_inheritable(proto_out, False)
    os.set_inheritable(proto_in_fd, False)
    channel = Channel(proto_out)
    kernel = Kernel(channel, os.fdopen(proto_in_fd, "rb", buffering=1 << 16))
    kernel.capture_descriptors()
    load_sibling("sandcell_user_site").add_to_path()
    kernel.start_shell()
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
    # run costs what every later one does.
    kernel.shell.run_cell("None", store_history=False, silent=True)
    threading.Thread(target=kernel.control_loop, name="control", daemon=True).start()
    threading.Thread(target=kernel.flusher_loop, name="flusher", daemon=True).start()
    version = sys.version.split()[0]
    channel.send({"type": "ready", "protocolVersion": PROTOCOL_VERSION, "language": "python", "version": version, "python": version, "pid": os.getpid()})
    return kernel


if __name__ == "__main__":
    main()
