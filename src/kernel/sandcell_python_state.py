"""A Python context's state written down and read back, for snapshots (the
kernel's state-save and state-load requests, docs/kernel-protocol.md).

What is kept: every name the user bound (values, DataFrames and arrays,
functions, lambdas and classes defined in cells and their instances), modules
by name (imported again on load), the working directory, what the code changed
in os.environ and added to sys.path, and the execution count. Values go through
dill as one pickle, so what two names share (an instance and its class, a list
bound twice) is shared again after loading; a name that cannot be pickled (a
socket, a generator, a thread) is left out and named with the reason, costing
only that name.

The file: a line `sandcell-python-state 2`, 16 digits giving where the header
starts, the pickle, then the header (JSON: what is in it and what was left
out), last because what was left out is known only once the pickle is written:
the pickle goes straight to the file, never whole in memory. A stream (a pipe
read as it is written) is format 1: the magic line `sandcell-python-state 1`,
the header's length on a line, the header, then the pickle, which needs one
pass pickling into nothing first to know what the header says. Format 1 is
read front to back; format 2 takes one seek, to its header. It is
loaded only inside a sandbox, after the host checked it is the file this
sandbox's key wrote (an HMAC): a pickle runs code when loaded.
"""

import importlib
import io
import json
import os
import re
import sys
import types

MAGIC = b"sandcell-python-state 2\n"
MAGIC_1 = b"sandcell-python-state 1\n"
OFFSET_DIGITS = 16
MAX_HEADER_BYTES = 8 * 1024 * 1024
# IPython's own names: its output cache (_, __, _5, _i5, _oh …), In/Out and the exit helpers.
IPYTHON_NAME = re.compile(r"^(_+|_i{1,3}|_i?\d+|_dh|_oh|_ih|In|Out|exit|quit|get_ipython)$")


class NotAState(ValueError):
    """The file is not a Python state of this format: nothing of it was loaded."""


class Baseline:
    """What the context held before the user's code ran: only changes to it are kept."""

    def __init__(self, namespace, environ=None, sys_path=None):
        self.names = dict(namespace)
        self.environ = dict(os.environ if environ is None else environ)
        self.sys_path = list(sys.path if sys_path is None else sys_path)


def user_names(namespace, baseline):
    """The names the user bound or rebound, in the order they were bound."""
    names = []
    for name, value in namespace.items():
        if name.startswith("__") or IPYTHON_NAME.match(name):
            continue
        if name in baseline.names and baseline.names[name] is value:
            continue
        names.append(name)
    return names


def unpicklable_reason(error, value):
    """`socket`, `generator`, …: what made a value unpicklable, short."""
    found = re.search(r"cannot pickle '([^']+)' object", str(error))
    if found:
        return found.group(1)
    return f"{type(value).__name__}: {type(error).__name__}: {str(error)[:200]}"


class Discard:
    """A file that keeps nothing: where a value is pickled only to learn whether it can be."""

    def write(self, data):
        return len(data)

    def tell(self):
        return 0

    def seek(self, offset, whence=0):
        return 0

    def truncate(self, size=None):
        return 0


_PICKLER = []


def pickler_class():
    """dill's Pickler, writing an array's data straight to the file, as the C
    pickler does. dill's is Python's own pickler, and it pickles a NumPy array
    by its `__reduce__`, which copies the data into a bytes object: for a 100
    MB array, 100 MB more memory and a copy on every pickling (twice for a
    stream, whose names are first pickled into nothing). Here an array of
    NumPy's own class (a subclass keeps dill's way) is pickled by its protocol
    5 reduction, whose buffer is written as it is, with the opcodes Python's
    pickler gives a buffer: bytearray for a writable one, bytes for a read-only
    one, so a read-only array comes back read-only (by `__reduce__` it came
    back writable)."""
    if _PICKLER:
        return _PICKLER[0]
    import pickle
    import struct

    import dill

    stock_buffer = pickle._Pickler.dispatch[pickle.PickleBuffer]

    def save_buffer(pickler, buffer):
        with buffer.raw() as view:
            if pickler._buffer_callback is None and view.nbytes >= pickler.framer._FRAME_SIZE_TARGET:
                opcode = pickle.BINBYTES8 if view.readonly else pickle.BYTEARRAY8
                pickler._write_large_bytes(opcode + struct.pack("<Q", view.nbytes), view)
                return
        stock_buffer(pickler, buffer)

    class Dispatch:
        """dill's dispatch, as it is when asked (dill adds to it as it meets types), but for these two."""

        def get(self, kind, default=None):
            if kind is pickle.PickleBuffer:
                return save_buffer
            if getattr(kind, "__module__", None) == "numpy" and kind.__name__ == "ndarray":
                return None  # pickled by its __reduce_ex__(5)
            return dill.Pickler.dispatch.get(kind, default)

    class Pickler(dill.Pickler):
        dispatch = Dispatch()

    _PICKLER.append(Pickler)
    return Pickler


def pickle_into(value, main, out):
    """Pickles `value` by dill into the binary file `out`. Functions and
    classes of the user's module are pickled by value, their globals as a
    reference to that module's namespace (so after loading they see the names
    as they are then, not a copy). Protocol 5 writes large buffers (an array's
    data) straight to the file, never copied into a bytes object first."""
    pickler = pickler_class()(out, protocol=5)
    pickler._main = main
    pickler.dump(value)


def pickled(value, main):
    """`value` pickled by dill, as bytes."""
    out = io.BytesIO()
    pickle_into(value, main, out)
    return out.getvalue()


def dump_values(values, main, out):
    """Pickles `values` (a dict) into `out`, a seekable binary file; returns
    the names left out with why.

    Tried whole first; if that fails, what it wrote goes, each name alone finds
    the ones that cannot be pickled, and the rest are pickled whole again.
    """
    start = out.tell()

    def attempt(kept):
        try:
            pickle_into(kept, main, out)
            return True
        except Exception:
            out.seek(start)
            out.truncate()
            raise

    try:
        attempt(values)
        return []
    except Exception:
        pass
    skipped = []
    kept = {}
    for name, value in values.items():
        try:
            pickle_into(value, main, Discard())
            kept[name] = value
        except Exception as error:
            skipped.append({"name": name, "reason": unpicklable_reason(error, value)})
    try:
        attempt(kept)
        return skipped
    except Exception as error:
        # Each pickles alone but not together (rare: a failure that depends on what was pickled before).
        reason = f"could not be saved together with the others ({type(error).__name__}: {str(error)[:200]})"
        attempt({})
        return skipped + [{"name": name, "reason": reason} for name in kept]


def save(main, baseline, execution_count, out, stream=False):
    """Writes the state of the user's module `main` to the binary file `out`;
    returns the report (`saved`, `skipped`).

    With `stream`, `out` is written front to back and never sought (a pipe
    another sandbox reads as it is written): which names pickle is found first
    by pickling into nothing, so the header goes before the pickle (format 1)
    and the pickle is written once, whole."""
    namespace = main.__dict__
    modules = {}
    values = {}
    for name in user_names(namespace, baseline):
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        else:
            values[name] = value
    if stream:
        skipped = dump_values(values, main, Discard())
        header = state_header(modules, values, skipped, baseline, execution_count)
        encoded = json.dumps(header).encode()
        out.write(MAGIC_1 + b"%d\n" % len(encoded) + encoded)
        pickle_into({name: values[name] for name in header["values"]}, main, out)
        return {"saved": list(modules) + header["values"], "skipped": skipped}
    out.write(MAGIC)
    offset_at = out.tell()
    out.write(b"0" * OFFSET_DIGITS)  # where the header starts, once it is known
    skipped = dump_values(values, main, out)
    header = state_header(modules, values, skipped, baseline, execution_count)
    header_at = out.tell()
    out.write(json.dumps(header).encode())
    out.seek(offset_at)
    out.write(b"%0*d" % (OFFSET_DIGITS, header_at))
    out.seek(0, io.SEEK_END)
    return {"saved": list(modules) + header["values"], "skipped": skipped}


def state_header(modules, values, skipped, baseline, execution_count):
    """What a state file says of itself: what is in its pickle, what was left out and why, and the rest of the context."""
    skipped_names = {entry["name"] for entry in skipped}
    return {
        "modules": modules,
        "values": [name for name in values if name not in skipped_names],
        "skipped": skipped,
        "cwd": os.getcwd(),
        "environ": {
            "set": {key: value for key, value in os.environ.items() if baseline.environ.get(key) != value},
            "unset": [key for key in baseline.environ if key not in os.environ],
        },
        "sysPath": [entry for entry in sys.path if entry not in baseline.sys_path],
        "executionCount": execution_count,
    }


def read_header(source):
    """The header of a state file (seekable), leaving `source` at the pickle's start."""
    magic = source.read(len(MAGIC))
    if magic == MAGIC_1:
        try:
            length = int(source.readline(32))
        except ValueError:
            raise NotAState("the state file's header has no length") from None
        if not 0 <= length <= MAX_HEADER_BYTES:
            raise NotAState("the state file's header is too large")
        return parse_header(source.read(length))
    if magic != MAGIC:
        raise NotAState("not a sandcell Python state file")
    digits = source.read(OFFSET_DIGITS)
    if len(digits) != OFFSET_DIGITS or not digits.isdigit():
        raise NotAState("the state file does not say where its header is")
    pickle_at = source.tell()
    header_at = int(digits)
    if header_at < pickle_at:
        raise NotAState("the state file's header is out of place")
    source.seek(header_at)
    encoded = source.read(MAX_HEADER_BYTES + 1)
    if len(encoded) > MAX_HEADER_BYTES:
        raise NotAState("the state file's header is too large")
    source.seek(pickle_at)
    return parse_header(encoded)


def parse_header(encoded):
    try:
        header = json.loads(encoded)
    except ValueError:
        raise NotAState("the state file's header is not JSON") from None
    if not isinstance(header, dict) or not all(key in header for key in ("modules", "values", "skipped", "cwd", "environ", "sysPath", "executionCount")):
        raise NotAState("the state file's header is incomplete")
    return header


def load(source, main):
    """Reads a state file into the user's module `main`; returns the report (`restored`, `skipped`, `executionCount`).

    The skipped are those left out when it was saved and those that fail to
    come back now (a module no longer installed, a class it needs gone)."""
    import dill

    namespace = main.__dict__
    header = read_header(source)
    restored = []
    skipped = list(header["skipped"])
    for name, module in header["modules"].items():
        try:
            namespace[name] = importlib.import_module(module)
            restored.append(name)
        except Exception as error:
            skipped.append({"name": name, "reason": f"module {module} could not be imported: {error}"})
    try:
        unpickler = dill.Unpickler(source)
        unpickler._main = main
        values = unpickler.load()
    except Exception as error:
        reason = f"the saved values could not be read back ({type(error).__name__}: {str(error)[:200]})"
        skipped += [{"name": name, "reason": reason} for name in header["values"]]
        values = {}
    namespace.update(values)
    restored += list(values)
    try:
        os.chdir(header["cwd"])
    except OSError as error:
        skipped.append({"name": "(working directory)", "reason": f"{header['cwd']}: {error.strerror}"})
    for key in header["environ"]["unset"]:
        os.environ.pop(key, None)
    os.environ.update(header["environ"]["set"])
    for entry in header["sysPath"]:
        if entry not in sys.path:
            sys.path.append(entry)
    return {"restored": restored, "skipped": skipped, "executionCount": header["executionCount"]}


def save_bytes(main, baseline, execution_count):
    """The state as bytes, with its report (for tests and small states)."""
    out = io.BytesIO()
    report = save(main, baseline, execution_count, out)
    return out.getvalue(), report
