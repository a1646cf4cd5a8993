"""sandcell's supervisor: the first process in every sandbox.

It owns the channel to the host (its stdin and stdout, newline-delimited
JSON; docs/kernel-protocol.md, protocol version 2), prepares what belongs to
the whole sandbox (no leaked descriptors, the accounts, the resource limits),
and starts everything else as its children: contexts (one kernel each; the
`python` one at once) and commands. It answers file requests itself, so files
work whatever a kernel is doing.

It is PID 1 of the sandbox's PID namespace (bwrap --as-pid-1; a container
without docker-init), so the code it runs, under the same uid, cannot end
it: the kernel delivers to a namespace's init only the signals it has a
handler for (SIGKILL and SIGSTOP never; kill(-1) passes it by), it ignores
SIGINT, its only handled signal is SIGCHLD (it reaps every orphan), it is not
dumpable (no /proc/1/mem, fd or environ for the code), and the seccomp filter
refuses setting another process's limits (a CPU-time limit would SIGKILL it).

One thread, one epoll loop: the warm round trip of an execution crosses it
twice, so it stays a read, a small parse and a write each way. Python's
subprocess is not used: its imports would cost every cold start.
"""

import json
import os
import sys

KERNEL_DIRECTORY = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = "/mnt/data"


def read_options():
    try:
        options = json.loads(os.environ.get("SANDCELL_KERNEL_OPTIONS", "{}"))
    except ValueError:
        return {}
    return options if isinstance(options, dict) else {}


def apply_rlimits(limits):
    """Lowers resource limits before any user code runs; the sandbox has no
    CAP_SYS_RESOURCE in the initial user namespace, so they cannot be raised.
    The sandbox-wide ones apply here and are inherited; the ones that bound a
    process over its life (CPU time, address space) are returned, for each
    child to take before it execs: they are meant for the code, and the
    supervisor lives as long as the sandbox."""
    import resource

    per_process = (resource.RLIMIT_CPU, resource.RLIMIT_AS)
    for_children = []
    names = {
        "addressSpaceBytes": resource.RLIMIT_AS,
        "processes": resource.RLIMIT_NPROC,
        "cpuSeconds": resource.RLIMIT_CPU,
        "fileSizeBytes": resource.RLIMIT_FSIZE,
        "openFiles": resource.RLIMIT_NOFILE,
    }
    for key, which in names.items():
        value = limits.get(key)
        if value is None:
            continue
        value = int(value)
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        # CPU: the soft limit delivers SIGXCPU, the hard one SIGKILL a second later.
        hard_value = value + 1 if which == resource.RLIMIT_CPU else value
        if hard != resource.RLIM_INFINITY:
            hard_value = min(hard_value, hard)
        if which in per_process:
            for_children.append((which, (value, hard_value)))
        else:
            resource.setrlimit(which, (value, hard_value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return for_children


def write_accounts():
    """Name the user `sandbox`, home /tmp, whatever its uid. In the runtime
    image /etc/passwd and /etc/group are links into /tmp, because the host uid
    a Docker session runs as (leased per session) cannot be known when the
    image is built; the supervisor writes them before anything looks a user up.
    Where they are real files (bubblewrap's synthetic ones), nothing is done."""
    uid, gid = os.getuid(), os.getgid()
    accounts = {
        "/etc/passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        "sandbox:x:%d:%d:sandbox:/tmp:/usr/sbin/nologin\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" % (uid, gid),
        "/etc/group": "root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n" % gid,
    }
    for link, content in accounts.items():
        if not os.path.islink(link) or os.path.exists(link):
            continue
        target = os.path.join(os.path.dirname(link), os.readlink(link))
        try:
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            with open(target, "w") as handle:
                handle.write(content)
        except OSError:
            pass  # lookups by name fail; nothing else depends on them


def start_network_forwarder(network):
    """When the session allows internet access, the host bound its gate's socket
    in: listen for the proxy clients before any user code runs."""
    if not isinstance(network, dict):
        return
    socket_path, port = network.get("socket"), network.get("port")
    if not isinstance(socket_path, str) or not isinstance(port, int):
        return
    import sandcell_network_forwarder

    try:
        sandcell_network_forwarder.start(socket_path, port)
    except OSError as error:
        os.write(2, ("the network forwarder could not listen: %s\n" % error).encode("utf-8", "replace"))
        sys.exit(1)


def keep_out_of_reach():
    """Shields the supervisor from the code it runs (see the module's header):
    Python's SIGINT handler would let any process raise KeyboardInterrupt in it
    (children get SIGINT's default back, sandcell_process.RESET_SIGNALS), and a
    dumpable supervisor's memory and descriptors are open to every process of
    its uid through /proc. Called before the host can start any code."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        PR_SET_DUMPABLE = 4
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (ImportError, OSError) as error:  # an environment image's python without ctypes, say
        os.write(2, ("supervisor: could not make itself non-dumpable: %s\n" % error).encode("utf-8", "replace"))


def prepare(options):
    """What belongs to the whole sandbox, before any kernel starts; returns
    sandcell_process, which starts them."""
    # Descriptors the host process leaked (anything beyond stdio) must not
    # reach any process of the sandbox.
    os.closerange(3, 1 << 20)
    child_limits = apply_rlimits(options["limits"]) if isinstance(options.get("limits"), dict) else []
    write_accounts()
    if KERNEL_DIRECTORY not in sys.path:
        sys.path.insert(0, KERNEL_DIRECTORY)
    import sandcell_process

    sandcell_process.CHILD_LIMITS = child_limits
    # Before any kernel or command starts: Python adds the user site only if it exists then.
    import sandcell_user_site

    sandcell_user_site.create()
    return sandcell_process


def run(options, process):
    """Serves the host, with `process` as the `python` context's kernel."""
    # While the kernel boots (ctypes costs milliseconds), and before the loop passes on any request.
    keep_out_of_reach()
    from sandcell_routes import Supervisor

    supervisor = Supervisor(options, KERNEL_DIRECTORY)
    supervisor.boot(process)
    supervisor.loop.run()


def main():
    options = read_options()
    sandcell_process = prepare(options)
    start_network_forwarder(options.get("network"))
    from sandcell_kernels import kernel_table

    # The Python kernel takes far longer to start than anything here: start
    # it first, and load the rest of the supervisor while it boots.
    argv, mode = kernel_table(KERNEL_DIRECTORY, sys.executable or "/usr/bin/python3")["python"]
    try:
        process = sandcell_process.spawn_kernel(argv, mode, DATA_DIR, dict(os.environ))
    except sandcell_process.SpawnError as error:
        os.write(2, ("the python kernel could not start: %s\n" % error).encode("utf-8", "replace"))
        sys.exit(1)
    run(options, process)


def main_forked(kernel_main):
    """main() in a session forked from a template (sandcell_zygote.py): the
    modules are loaded already, and the kernel is a fork that calls
    `kernel_main` rather than a new Python. It is forked before the network
    forwarder starts its thread: a fork copies only the calling thread."""
    options = read_options()
    sandcell_process = prepare(options)
    try:
        process = sandcell_process.fork_kernel(kernel_main, DATA_DIR, dict(os.environ))
    except sandcell_process.SpawnError as error:
        os.write(2, ("the python kernel could not start: %s\n" % error).encode("utf-8", "replace"))
        os._exit(1)
    start_network_forwarder(options.get("network"))
    run(options, process)


if __name__ == "__main__":
    main()
