"""Where `pip install` puts packages when the system's are read-only: the
user base named by PYTHONUSERBASE (the sandbox's own /tmp, set by the host),
never HOME, which may be the session's files (/home/user is /mnt/data).

Python adds the user site-packages directory to sys.path only if it exists at
start-up, and the kernels run isolated (-I), which skips it altogether. So the
supervisor creates the directory before anything starts, and each Python
kernel puts it on its own path: a package installed from a cell (`!pip
install`, `%pip install`, subprocess) imports in the next cell, no restart.
"""

import os
import site
import sys


def user_site_directory():
    """The user site-packages directory, or None without PYTHONUSERBASE (the host chose none)."""
    if not os.environ.get("PYTHONUSERBASE"):
        return None
    return site.getusersitepackages()


def create():
    """Create the directory (the supervisor, before the first kernel or command)."""
    directory = user_site_directory()
    if directory is None:
        return None
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
    except OSError:
        return None
    return directory


def add_to_path():
    """Put the directory on sys.path where site would have: before the system's
    packages, so an upgrade installed by the user wins over the system's copy
    (for modules not yet imported), and read its .pth files."""
    directory = create()
    if directory is None or directory in sys.path:
        return
    position = next(
        (index for index, entry in enumerate(sys.path) if entry.endswith(("site-packages", "dist-packages"))),
        len(sys.path),
    )
    sys.path.insert(position, directory)
    site.addsitedir(directory)
