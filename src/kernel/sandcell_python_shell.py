"""The IPython shell the Python kernel (sandcell_kernel.py) runs code in:
its results, displays and errors go to the kernel's runner
(sandcell_python_runner.py: emit_output, emit_error),
and SystemExit ends the code as it ends a script, not the kernel.
"""

import sys

PLAIN_TYPES = (int, float, bool, complex, str, bytes, type(None))


def create_shell(runner, mime_types):
    """The shell, its display hooks sending to `runner`, showing `mime_types`."""
    import bdb

    from IPython.core.autocall import ExitAutocall
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets import default

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
                runner.emit_output("result", self._data[0], self._data[1])
            self._data = None

    class HostDisplayPublisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            runner.emit_output("display", data, metadata or {})

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
                if runner.code_exited(error.code) != 0:
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
            runner.emit_error(etype, evalue, stb)

        def showsyntaxerror(self, filename=None, running_compiled_code=False):
            etype, value, tb = self._get_exc_info()
            stb = self.SyntaxTB.structured_traceback(etype, value, [])
            runner.emit_error(etype, value, stb)

    from traitlets.config import Config

    config = Config()
    # No history database: nothing written to disk, no open file behind the user's back.
    config.HistoryManager.enabled = False
    config.HistoryManager.hist_file = ":memory:"
    shell = Shell.instance(
        config=config,
        displayhook_class=HostDisplayHook,
        display_pub_class=HostDisplayPublisher,
        colors="NoColor",
    )
    shell.display_formatter.active_types = list(mime_types)
    # Plain-text tracebacks for models and terminals alike.
    shell.InteractiveTB.set_mode("Context")
    try:
        shell.InteractiveTB.color_toggle = lambda: None
    except Exception:
        pass
    shell.user_ns["__name__"] = "__main__"
    return shell
