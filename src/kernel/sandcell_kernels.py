"""The kernel table: how each language's kernel is started, and whether the
sandbox has it. Small on purpose: the supervisor reads it before anything
else, to start the Python kernel as early as it can.
"""

import os

from sandcell_process import find_executable


def kernel_table(kernel_directory, python):
    """language → (argv, mode): 'stdio' for a kernel that speaks on its stdin
    and stdout (Python), 'fd34' for one that speaks on fds 3 and 4. A language
    is available when its kernel file and its program are both present."""
    return {
        "python": ([python, "-I", "-B", kernel_directory + "/sandcell_kernel.py"], "stdio"),
        "javascript": (["node", kernel_directory + "/sandcell_javascript_kernel.mjs", "javascript"], "fd34"),
        "typescript": (["node", kernel_directory + "/sandcell_javascript_kernel.mjs", "typescript"], "fd34"),
        "bash": ([python, "-I", "-B", kernel_directory + "/sandcell_bash_kernel.py"], "fd34"),
        # Not --interactive: R stops reading its arguments there, so -f after it is
        # ignored and R reads stdin (/dev/null) and quits; before -f, -f wins. The
        # kernel is its own console and catches every error, so R need not be interactive.
        "r": (["R", "--no-echo", "--no-save", "--no-restore", "-f", kernel_directory + "/sandcell_r_kernel.R"], "fd34"),
    }


def language_available(kernel, path):
    argv = kernel[0]
    script = next((argument for argument in argv[1:] if argument.startswith("/")), None)
    if script is not None and not os.path.isfile(script):
        return False
    return find_executable(argv[0], path) is not None
