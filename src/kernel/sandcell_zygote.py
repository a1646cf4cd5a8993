"""sandcell's session template (a zygote): one warm Python per environment,
past the imports every session makes, forked for each new session.

The host (src/backends/bubblewrap/zygote.ts) starts it as root, through bwrap,
in a mount namespace of its own: the host's filesystem with the environment's
/usr, an empty /tmp, a fresh /proc, and the kernel files at /opt/sandcell,
where a session has them. It holds no secret and no session's data.

Its channel is its stdin and stdout, newline-delimited JSON. The first line
is its configuration; then requests `start` and `kill`, answered by events
`ready`, `started`, `failed` and `exited` (each with the session's token).

A start forks a helper that makes the session, isolated as one bwrap starts
(sandcell_zygote_session.py says how), and reports the pid of its PID 1.

The template stays single-threaded (a fork copies only the calling thread),
is the subreaper of every session (the helpers exit at once), and reports
each session's end. Its own death ends no session: they are not in a PID
namespace of its.
"""

import gc
import json
import os
import select
import signal
import stat
import sys
import threading

KERNEL_DIRECTORY = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, KERNEL_DIRECTORY)
from sandcell_zygote_session import check, libc, read_file, session_main  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36
START_TIMEOUT_S = 10.0
TOKEN_BYTES = 32
# What a session's /tmp may get of the template's (see scratch_files).
SCRATCH_BYTES = 4 << 20


def scratch_files(top):
    """The directories and files under `top`, parents first, as (relative path, mode, bytes or None for a
    directory), within SCRATCH_BYTES: what every session's /tmp starts with."""
    entries, total = [], 0
    for directory, names, files in os.walk(top):
        relative = os.path.relpath(directory, top)
        if relative != ".":
            entries.append((relative, stat.S_IMODE(os.stat(directory).st_mode), None))
        for name in files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or total + info.st_size > SCRATCH_BYTES:
                continue
            total += info.st_size
            entries.append((os.path.relpath(path, top), stat.S_IMODE(info.st_mode), read_file(path)))
    return entries


def load_kernel():
    """The Python kernel's module, loaded as sandcell_process will find it in a fork (by its path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sandcell_kernel", os.path.join(KERNEL_DIRECTORY, "sandcell_kernel.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# What a session imports on its way to its first cell, besides the preload: the supervisor's modules, and
# the IPython the kernel's shell is made of (sandcell_python_shell.create_shell).
SESSION_MODULES = (
    "sandcell_supervisor",
    "sandcell_routes",
    "sandcell_user_site",
    "seccomp_loader",
    "bdb",
    "IPython.core.interactiveshell",
    "IPython.core.autocall",
    "IPython.core.displayhook",
    "IPython.core.displaypub",
    "traitlets",
)


# What a session's first DataFrame and first chart load lazily (pandas' describe and HTML, matplotlib's Agg
# canvas and fonts), done once here in a namespace of their own: a session that uses them shares those pages
# instead of making its own. Each runs only when its module was preloaded.
WARM_UPS = {
    "pandas": """
import pandas
frame = pandas.DataFrame({"a": range(10), "b": [0.5] * 10})
frame["c"] = frame.a + frame.b
frame.describe()
repr(frame)
frame._repr_html_()
""",
    "matplotlib": """
import io
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
figure = Figure()
figure.add_subplot().plot([1, 2, 3], [3, 1, 2])
FigureCanvasAgg(figure).print_png(io.BytesIO())
""",
}


def warm(preload):
    """Everything a session would import before its first cell; returns what failed to import."""
    import importlib

    failed = []
    for name in SESSION_MODULES + tuple(preload):
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - a missing optional package costs only its warmth
            failed.append("%s: %s" % (name, error))
    for name, code in WARM_UPS.items():
        if name not in preload or name not in sys.modules:
            continue
        try:
            exec(code, {"__name__": "sandcell_warm_up"})
        except Exception as error:  # noqa: BLE001
            failed.append("warming %s: %s" % (name, error))
    return failed


class Template:
    def __init__(self, config):
        self.config = config
        self.sessions = {}  # the session's PID 1 → token
        self.kernel = None
        self.kernel_files = {}
        self.host_mounts = None
        self.scratch = []

    def send(self, message):
        data = (json.dumps(message) + "\n").encode("utf-8")
        while data:
            data = data[os.write(1, data) :]

    def boot(self):
        os.environ.clear()
        os.environ.update(self.config.get("environment", {}))
        check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
        # The host process's mount namespace, which each session starts from (see helper).
        self.host_mounts = os.open("/proc/%d/ns/mnt" % int(self.config["hostPid"]), os.O_RDONLY | os.O_CLOEXEC)
        self.kernel = load_kernel()
        # Copied into every session's /opt/sandcell, as bwrap copies them.
        for name in sorted(os.listdir(KERNEL_DIRECTORY)):
            if name.startswith("sandcell_"):
                self.kernel_files[name] = read_file(os.path.join(KERNEL_DIRECTORY, name))
        failed = warm(self.config.get("preload", []))
        try:
            self.kernel.prepare()
        except Exception as error:  # noqa: BLE001 - each session then makes its own shell
            failed.append("the kernel's shell: %s" % error)
        self.scratch = scratch_files("/tmp")
        threads = [thread.name for thread in threading.enumerate() if thread is not threading.main_thread()]
        if threads:
            # A fork copies the calling thread alone: locks the others held would stay held in every session.
            raise RuntimeError("the template's imports started threads (%s): sessions cannot be forked from it" % ", ".join(threads))
        import sandcell_process

        sandcell_process.note_template_modules()
        # The objects of the imports stay where they are: a session's collections do not touch (and copy) their pages.
        # No collection first: the garbage it would free leaves holes in the template's pages, which a session's
        # first objects fill, each copying its page (measured: 0.5 MB more per session after ten pandas cells).
        gc.freeze()
        self.send({"type": "ready", "pid": os.getpid(), "failed": failed})

    def start(self, request):
        token = request.get("token")
        if not isinstance(token, str) or len(token) != TOKEN_BYTES:
            return
        report_read, report_write = os.pipe()
        try:
            helper_pid = os.fork()
        except OSError as error:
            os.close(report_read)
            os.close(report_write)
            self.send({"type": "failed", "token": token, "message": "fork: %s" % error})
            return
        if helper_pid == 0:
            os.close(report_read)
            session_main(request, report_write, self.kernel, self.kernel_files, self.host_mounts, self.scratch)
        os.close(report_write)
        answer = self.read_report(report_read)
        os.close(report_read)
        try:
            pid = int(answer.decode("ascii").strip())
        except ValueError:
            pid = None
            try:
                os.kill(helper_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # The helper exits as it reports: reaped here, its CPU is the part of the start no process of the session
        # counts (the session's usage adds it).
        _, _, usage = os.wait4(helper_pid, 0)
        if pid is None:
            message = answer.decode("utf-8", "replace").strip() or "the session's helper ended without a word"
            self.send({"type": "failed", "token": token, "message": message})
            return
        self.sessions[pid] = token
        self.send({"type": "started", "token": token, "pid": pid, "cpuSeconds": usage.ru_utime + usage.ru_stime})

    def read_report(self, descriptor):
        answer = b""
        while len(answer) < 4096:
            readable, _, _ = select.select([descriptor], [], [], START_TIMEOUT_S)
            if not readable:
                return b"the session took over %d s to start" % START_TIMEOUT_S
            chunk = os.read(descriptor, 4096)
            if not chunk:
                break
            answer += chunk
        return answer

    def kill(self, request):
        for pid, token in self.sessions.items():
            if token == request.get("token"):
                # Still our child (not yet reaped), so the pid is still its: PID 1 takes its namespace with it.
                os.kill(pid, signal.SIGKILL)

    def reap(self):
        from sandcell_event_loop import ended_children, exit_status

        for pid, status in ended_children():
            token = self.sessions.pop(pid, None)
            if token is None:
                continue  # a helper, or an orphan of a session's that came to us
            code, signal_name = exit_status(status)
            self.send({"type": "exited", "token": token, "code": code, "signal": signal_name})

    def serve(self):
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        os.set_blocking(wake_read, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda number, frame: None)
        pending = b""
        while True:
            readable, _, _ = select.select([0, wake_read], [], [])
            if wake_read in readable:
                try:
                    os.read(wake_read, 4096)
                except BlockingIOError:
                    pass
                self.reap()
            if 0 in readable:
                chunk = os.read(0, 1 << 16)
                if not chunk:
                    return  # the host is gone; the sessions end with their channels
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    self.handle(line)
                self.reap()

    def handle(self, line):
        try:
            request = json.loads(line)
        except ValueError:
            return
        if not isinstance(request, dict):
            return
        if request.get("type") == "start":
            self.start(request)
        elif request.get("type") == "kill":
            self.kill(request)


def main():
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        line += chunk
    template = Template(json.loads(line))
    template.boot()
    template.serve()


if __name__ == "__main__":
    main()
