"""Starting the sandbox's processes: fork and exec by hand (subprocess costs
the supervisor's cold start tens of milliseconds of imports), each child in
its own session and process group, with exactly the descriptors it is given.
"""

import errno
import fcntl
import os
import signal
import sys

# Python ignores these itself; an ignored signal stays ignored across exec,
# so a child would never die of SIGPIPE (`yes | head` would spin) or of the
# file-size limit.
RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGCHLD, signal.SIGTERM)
# Above every descriptor a child is given: sources are moved here first, so
# that placing one never overwrites another.
SCRATCH_DESCRIPTOR = 16
# (resource, (soft, hard)) pairs every child takes before it execs (set by the supervisor).
CHILD_LIMITS = []


class SpawnError(Exception):
    def __init__(self, step, number, message):
        super().__init__("%s: %s" % (step, message))
        self.step = step
        self.errno = number


def find_executable(name, path):
    """The file `name` names on `path` (a PATH value), or None."""
    if "/" in name:
        return name if os.access(name, os.X_OK) else None
    for directory in path.split(":"):
        if not directory:
            continue
        candidate = directory + "/" + name
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def own_session():
    """In a child: a session and process group of its own, and the signal
    dispositions an exec gives (RESET_SIGNALS back to their defaults, no
    wake-up descriptor of the supervisor's loop)."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    for number in RESET_SIGNALS:
        signal.signal(number, signal.SIG_DFL)


def take_child_limits():
    """In a child: the limits every child of the sandbox takes (CHILD_LIMITS)."""
    if CHILD_LIMITS:
        import resource

        for which, pair in CHILD_LIMITS:
            resource.setrlimit(which, pair)


def spawn(argv, cwd, env, descriptors, setup=None):
    """Starts argv in a new session; descriptors[n] (one of ours, or None for
    /dev/null) becomes the child's descriptor n; `setup`, if given, is called
    in the child once they are in place (a terminal takes its controlling tty).
    Returns the child's pid, which is also its process group. Raises
    SpawnError when it could not start."""
    executable = find_executable(argv[0], env.get("PATH", "/usr/bin:/bin"))
    if executable is None:
        raise SpawnError("exec", errno.ENOENT, "%s: command not found" % argv[0])
    error_read, error_write = os.pipe()
    try:
        pid = os.fork()
    except OSError as error:  # the process limit, most often
        os.close(error_read)
        os.close(error_write)
        raise SpawnError("fork", error.errno or 0, error.strerror or str(error))
    if pid == 0:  # the child: only async-signal-safe-ish work until exec
        step = "setsid"
        try:
            own_session()
            step = "setrlimit"
            take_child_limits()
            step = "descriptors"
            moved = []
            for source in descriptors:
                if source is None:
                    source = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
                moved.append(fcntl.fcntl(source, fcntl.F_DUPFD_CLOEXEC, SCRATCH_DESCRIPTOR))
            for target, source in enumerate(moved):
                os.dup2(source, target)
            if setup is not None:
                step = "terminal"
                setup()
            step = "chdir"
            os.chdir(cwd)
            step = "exec"
            os.execve(executable, argv, env)
        except OSError as error:
            report = "%s\0%d\0%s" % (step, error.errno or 0, error.strerror or error)
            os.write(error_write, report.encode("utf-8", "replace"))
        except BaseException as error:
            os.write(error_write, ("%s\0%d\0%s" % (step, 0, error)).encode("utf-8", "replace"))
        finally:
            os._exit(127)
    os.close(error_write)
    report = b""
    while True:
        chunk = os.read(error_read, 4096)
        if not chunk:
            break
        report += chunk
    os.close(error_read)
    if report:
        os.waitpid(pid, 0)
        step, number, message = (report.decode("utf-8", "replace").split("\0", 2) + ["", ""])[:3]
        raise SpawnError(step, int(number or 0), message)
    return pid


class KernelProcess:
    """A kernel just started, and our ends of its channels (None where its mode has none)."""

    def __init__(self, pid, requests, events, output, errors):
        self.pid = pid
        self.requests = requests
        self.events = events
        self.output = output
        self.errors = errors


def spawn_kernel(argv, mode, cwd, env):
    """Starts a kernel with the descriptors of its mode (docs/kernel-protocol.md):
    'stdio': requests on 0, events on 1, startup errors on 2;
    'fd34': /dev/null on 0, output on 1 and 2, requests on 3, events on 4."""
    requests_read, requests_write = os.pipe()
    events_read, events_write = os.pipe()
    errors_read, errors_write = os.pipe()
    output_read = output_write = None
    if mode == "stdio":
        child = [requests_read, events_write, errors_write]
    else:
        output_read, output_write = os.pipe()
        child = [None, output_write, errors_write, requests_read, events_write]
    try:
        pid = spawn(argv, cwd, env, child)
    except SpawnError:
        for fd in (requests_write, events_read, errors_read, output_read):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in child:
            if fd is not None:
                os.close(fd)
    return KernelProcess(pid, requests_write, events_read, output_read, errors_read)


def fork_kernel(kernel_main, cwd, env):
    """spawn_kernel's 'stdio' mode for a sandbox forked from a template
    (sandcell_zygote.py): the child is a fork that becomes the kernel by
    calling kernel_main(), with what an exec would have given it: its own
    session, default signals, the children's limits, exactly descriptors
    0/1/2, `env` as its environment, none of sandcell's modules importable,
    and dumpable again (the supervisor is not, and a fork inherits that)."""
    requests_read, requests_write = os.pipe()
    events_read, events_write = os.pipe()
    errors_read, errors_write = os.pipe()
    try:
        pid = os.fork()
    except OSError as error:
        for fd in (requests_read, requests_write, events_read, events_write, errors_read, errors_write):
            os.close(fd)
        raise SpawnError("fork", error.errno or 0, error.strerror or str(error))
    if pid == 0:
        try:
            own_session()
            take_child_limits()
            for target, source in enumerate((requests_read, events_write, errors_write)):
                os.dup2(source, target)
            os.closerange(3, 1 << 20)
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            become_script(kernel_main)
        except BaseException:
            import traceback

            os.write(2, traceback.format_exc().encode("utf-8", "replace"))
        finally:
            os._exit(1)
    for fd in (requests_read, events_write, errors_write):
        os.close(fd)
    return KernelProcess(pid, requests_write, events_read, None, errors_read)


def set_command_line(words):
    """Shows `words` as this process's command line (/proc/PID/cmdline, what
    ps prints): a forked session's processes are not exec'd, so each would
    otherwise show its template's. Written over the process's own argument
    area, as setproctitle does: the title, a NUL, and a non-NUL last byte (so
    the kernel reads the title to its NUL). The template leaves room for it."""
    import ctypes

    with open("/proc/self/stat", "rb") as handle:
        stat = handle.read()
    fields = stat[stat.rindex(b")") + 2 :].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start and arg_end, fields 48 and 49
    title = " ".join(words).encode("utf-8", "replace")
    if len(title) + 2 > end - start:
        return
    ctypes.memmove(start, title + b"\0" * (end - start - len(title) - 1) + b" ", end - start)


def is_sandcell_module(name):
    return name.startswith("sandcell_") or name == "seccomp_loader"


# sandcell's modules in sys.modules when a template forks (sandcell_zygote.py), and the name last added then:
# a walk over all of sys.modules in every fork would write to the page of each of the ~1,200 names it holds
# (their reference counts), and copy them all, some 2.5 MB a session.
TEMPLATE_MODULES = None


def note_template_modules():
    """In the template, before its first fork."""
    global TEMPLATE_MODULES
    TEMPLATE_MODULES = ([name for name in sys.modules if is_sandcell_module(name)], next(reversed(sys.modules)))


def sandcell_modules():
    """sandcell's modules in sys.modules. In a fork of a template, its list and
    the names added since (the last ones: a dict keeps the order of insertion)."""
    if TEMPLATE_MODULES is None:
        return [name for name in sys.modules if is_sandcell_module(name)]
    listed, last = TEMPLATE_MODULES
    found = []
    for name in reversed(sys.modules):
        if name == last:
            return list(dict.fromkeys(found + [name for name in listed if name in sys.modules]))
        if is_sandcell_module(name):
            found.append(name)
    return found  # the template's last name is gone: every name was looked at


def become_script(kernel_main):
    """What a fresh `python -I` running the kernel's script would be: no
    sandcell module on sys.path or in sys.modules (the template loaded the
    supervisor's), the script as argv[0], dumpable. Then runs it."""
    import ctypes

    directory = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if entry != directory]
    for name in sandcell_modules():
        del sys.modules[name]
    sys.argv = [directory + "/sandcell_kernel.py"]
    set_command_line([sys.executable, "-I", "-B", sys.argv[0]])
    PR_SET_DUMPABLE = 4
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    # The signal dispositions a Python starts with (fork_kernel set them to the defaults an exec would give).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    kernel_main()


def kill_group(pid, number=signal.SIGKILL):
    """Signals a whole process group; one that has ended is no error."""
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        pass

