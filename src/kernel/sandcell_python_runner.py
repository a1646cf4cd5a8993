"""What the Python kernel (sandcell_kernel.py) does with an execution: runs
its code in the IPython shell (sandcell_python_shell.py) on the main thread,
with descriptors 1 and 2 captured, and sends what it makes as the
execution's events: stream output, results and displays, its error, input
asked of the host, and its end.

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
import os
import queue
import signal
import sys
import threading

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
# An error's name, in UTF-8 bytes: the same bound the host applies
# (src/session/output-limits.ts), so an honest error is never cut twice.
ERROR_NAME_LIMIT = 1024
# An input() prompt, in UTF-8 bytes (the host bounds it again).
PROMPT_LIMIT = 64 * 1024


class Runner:
    """Runs the executions of one Python context, one at a time. The kernel
    runs isolated, so sandcell's modules are not importable: this one's
    siblings come through the kernel's `load_sibling`."""

    def __init__(self, load_sibling):
        self.load_sibling = load_sibling
        self.output = load_sibling("sandcell_kernel_output")
        self.output_budget = load_sibling("sandcell_output").OutputBudget
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
    def attach(self, channel, options):
        """Takes the session's channel and its options (sandcell_kernel.attach)."""
        self.channel = channel
        self.output_limit = int(options.get("outputBytes", 1 << 20))
        self.result_limit = int(options.get("resultBytes", 32 << 20))
        # Jupyter metadata is a few keys (image sizes, flags); past this a result
        # keeps its data and loses its metadata.
        self.metadata_limit = min(1 << 20, self.result_limit)
        # Shared by stdout and stderr, whose buffers flush from several threads.
        self.budget = self.output_budget(self.output_limit, threading.Lock())
        self.stdout = self.output.StreamBuffer(channel, self.budget, "stdout")
        self.stderr = self.output.StreamBuffer(channel, self.budget, "stderr")

    def capture_descriptors(self):
        marker = b"\x00sandcell-sync-" + os.urandom(8).hex().encode("ascii") + b"\x00"
        self.sync_marker = marker
        for fd, buffer in ((1, self.stdout), (2, self.stderr)):
            read_end, write_end = os.pipe()
            os.set_inheritable(read_end, False)
            os.dup2(write_end, fd)
            os.close(write_end)
            self.captures.append((fd, self.output.DescriptorCapture(read_end, buffer, marker)))
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = self.output.TextStream(self.stdout, 1)
        sys.stderr = self.output.TextStream(self.stderr, 2)
        sys.__stdout__ = sys.stdout
        sys.__stderr__ = sys.stderr

    def start_shell(self):
        self.shell = self.load_sibling("sandcell_python_shell").create_shell(self, MIME_TYPES)

    def flush(self):
        self.stdout.flush()
        self.stderr.flush()

    # --- output ----------------------------------------------------------
    def execution_id(self):
        current = self.current
        return current["id"] if current else None

    def emit_output(self, kind, data, metadata):
        execution_id = self.execution_id()
        if execution_id is None:
            return
        self.flush()
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
        if self.results_used + self.output.bundle_size(bundle) > self.result_limit:
            self.budget.truncated = True
            return
        kept_metadata = self.output.bounded_metadata(metadata, self.metadata_limit)
        if kept_metadata is None:
            kept_metadata = {}
            self.budget.truncated = True
        message = {"type": kind, "id": execution_id, "data": bundle, "metadata": kept_metadata}
        if kind == "result":
            message["executionCount"] = self.shell.execution_count
        line = self.channel.encode(message)
        if self.results_used + len(line) > self.result_limit:
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
        self.flush()
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
        # oversized protocol message (the host cuts again if it must). An
        # error's value and traceback are bounded as the host bounds them.
        name, name_cut = self.output.cut_text(name, ERROR_NAME_LIMIT, "error name")
        value, value_cut = self.output.cut_text(value, self.output_limit, "error value")
        traceback, traceback_cut = self.output.cut_traceback([str(entry) for entry in stb], self.output_limit)
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

    # --- the control thread's -------------------------------------------------
    def interrupt(self, execution_id):
        with self.current_lock:
            current = self.current
            if current is None or (execution_id is not None and current["id"] != execution_id):
                return
            current["interrupted"] = True
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    # --- the main thread's ------------------------------------------------------
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
        self.flush()
        while not self.input_replies.empty():
            self.input_replies.get_nowait()  # answers to an earlier, interrupted request
        prompt, _ = self.output.cut_text(str(prompt), PROMPT_LIMIT, "prompt")
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

    def reset(self):
        self.shell.reset(new_session=True)
        self.shell.execution_count = 1

    def execute(self, message):
        """Runs an execute request's code to its end, which it sends."""
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
        self.flush()
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
