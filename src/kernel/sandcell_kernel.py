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

Here: the requests, their threads and replies, and the kernel's start. What an
execution does (its code, output, errors and input) is sandcell_python_runner.py;
the protocol's framing, shared with the bash kernel, sandcell_kernel_protocol.py.
"""

import json
import os
import queue
import sys
import threading
import time

FLUSH_INTERVAL_S = 0.05


def _read_options():
    raw = os.environ.pop("SANDCELL_KERNEL_OPTIONS", "{}")
    try:
        return json.loads(raw)
    except ValueError:
        return {}


def configure(options):
    """Takes the session's options: read from the environment when the kernel
    starts, or by a kernel forked from a template (sandcell_zygote.py), which
    loaded this module before any session existed."""
    global OPTIONS
    OPTIONS = options


configure(_read_options())


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


protocol = load_sibling("sandcell_kernel_protocol")
Runner = load_sibling("sandcell_python_runner").Runner


def is_complete(message):
    from IPython.core.inputtransformer2 import TransformerManager

    status, indent = TransformerManager().check_complete(message.get("code", ""))
    return {"status": status, "indent": indent or 0}


assistant = None


class Kernel:
    def __init__(self, channel, proto_in):
        self.requests = queue.Queue()
        self.runner = Runner(load_sibling)
        self.attach(channel, proto_in)
        # Handled on the control thread as they come, even while user code is busy.
        self.at_once = {
            "interrupt": lambda message: self.runner.interrupt(message.get("id")),
            "shutdown": lambda message: os._exit(0),
            "input-reply": self.runner.input_replies.put,
            "is-complete": lambda message: self.reply(message, is_complete),
        }

    def attach(self, channel, proto_in):
        """Takes the session's channel: at once, or in a kernel a template
        prepared before any session existed (prepare()), when its fork
        starts. The output budget is the session's (configure())."""
        self.channel = channel
        self.proto_in = proto_in
        self.runner.attach(channel, OPTIONS)

    # --- threads ----------------------------------------------------------
    def control_loop(self):
        for line in self.proto_in:
            protocol.take_request(line, self.at_once, self.requests.put, self.channel)
        os._exit(0)  # the host closed our stdin: it is gone

    def reply(self, message, handler):
        try:
            body = protocol.reply(message, **handler(message))
        except Exception as error:  # never let a bad request kill the control thread
            body = protocol.failure(message, "internal", "%s: %s" % (type(error).__name__, error))
        self.channel.send(body)

    def flusher_loop(self):
        while True:
            time.sleep(FLUSH_INTERVAL_S)
            try:
                self.runner.flush()
                self.channel.release_held()
            except Exception:
                pass

    # --- main thread -------------------------------------------------------
    def assist(self, message):
        """Answers complete or inspect (sandcell_python_assist.py)."""
        global assistant
        if assistant is None:
            assistant = load_sibling("sandcell_python_assist")
        code = message.get("code")
        code = code if isinstance(code, str) else ""
        cursor = message.get("cursorPos")
        if message.get("type") == "complete":
            return assistant.complete(self.runner.shell, code, cursor)
        return assistant.inspect(self.runner.shell, code, cursor, message.get("detailLevel"))

    def run_request(self, message):
        kind = message.get("type")
        if kind in ("complete", "inspect"):
            try:
                self.reply(message, self.assist)
            except KeyboardInterrupt:
                # An interrupt meant for an execution that had just ended.
                self.channel.send(protocol.failure(message, "interrupted", "interrupted"))
            return
        if kind == "ping":
            self.channel.send(protocol.reply(message))
            return
        if kind in ("state-save", "state-load"):
            self.channel.send(self.state_request(message))
            return
        if kind == "reset":
            self.runner.reset()
            self.channel.send(protocol.reply(message))
            return
        self.runner.execute(message)

    def state_request(self, message):
        """A snapshot's state-save or state-load: the user's namespace written to
        or read from the file at `path` (sandcell_python_state.py), as a reply."""
        path = message.get("path")
        if not protocol.is_absolute_path(path):
            return protocol.failure(message, "invalid-request", "path must be an absolute path")
        state = load_sibling("sandcell_python_state")
        shell = self.runner.shell
        try:
            if message["type"] == "state-save":
                baseline = state.Baseline(*self.baseline)
                # A stream is a pipe (to a fork) whose reader is open already: never waited for (a reader
                # gone is ENXIO, not a kernel stuck in open), and written front to back, never sought.
                stream = message.get("stream") is True
                flags = os.O_WRONLY | os.O_NONBLOCK if stream else os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                descriptor = os.open(path, flags | os.O_CLOEXEC, 0o600)
                os.set_blocking(descriptor, True)
                with open(descriptor, "wb", buffering=1 << 20) as out:
                    report = state.save(shell.user_module, baseline, shell.execution_count - 1, out, stream=stream)
                report["executionCount"] = shell.execution_count - 1
            else:
                # A pipe's writer may be gone already: opened without waiting for one (then it reads as empty).
                descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                os.set_blocking(descriptor, True)
                with open(descriptor, "rb", buffering=1 << 20) as source:
                    report = state.load(source, shell.user_module)
                shell.execution_count = int(report["executionCount"]) + 1
        except state.NotAState as error:
            return protocol.failure(message, "state-invalid", str(error))
        except (Exception, KeyboardInterrupt) as error:
            return protocol.failure(message, "state-failed", "%s: %s" % (type(error).__name__, error))
        return protocol.reply(message, **report)

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
    kernel.runner.start_shell()
    kernel.runner.shell.run_cell("None", store_history=False, silent=True)
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
    channel = protocol.Channel(proto_out)
    proto_in = os.fdopen(proto_in_fd, "rb", buffering=1 << 16)
    kernel = PREPARED
    if kernel is None:
        kernel = Kernel(channel, proto_in)
    else:
        kernel.attach(channel, proto_in)
    runner = kernel.runner
    runner.capture_descriptors()
    load_sibling("sandcell_user_site").add_to_path()
    if runner.shell is None:
        runner.start_shell()
    else:
        # IPython's directory history began where the template was.
        runner.shell.user_ns["_dh"][:] = [os.getcwd()]
    # An environment's warm imports are `import NAME` run before the first cell: the module is loaded
    # and its top-level name bound in the user's namespace (`import a.b` binds `a`).
    for name in OPTIONS.get("warmImports", []):
        try:
            runner.shell.user_ns[name.partition(".")[0]] = __import__(name)
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
        runner.shell.run_cell("None", store_history=False, silent=True)
    # What a snapshot leaves out: everything bound before the user's first cell.
    kernel.baseline = (dict(runner.shell.user_ns), dict(os.environ), list(sys.path))
    threading.Thread(target=kernel.control_loop, name="control", daemon=True).start()
    threading.Thread(target=kernel.flusher_loop, name="flusher", daemon=True).start()
    version = sys.version.split()[0]
    channel.send(protocol.ready("python", version, python=version))
    return kernel


if __name__ == "__main__":
    main()
