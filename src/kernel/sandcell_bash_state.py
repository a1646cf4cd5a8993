"""A bash context's state, for snapshots (the bash kernel's state-save and
state-load, sandcell_bash_kernel.py): the shell dumps itself as records
(__sandcell_dump, defined in the shell by its rc file); what differs from a
fresh shell's dump is written as the bash a load sources, each item followed
by its report (__sandcell_loaded), which the kernel reads back.

The file: a line `# sandcell-bash-state 1`, a line `# execution-count N`,
then that bash.
"""

import os
import re

from sandcell_bash_shell import quote_for_bash

# The shell's state as NUL-separated (kind, name, text) records, for a
# snapshot and, once a fresh shell is up, as its baseline. The options come
# first, as the code left them: then `local -` keeps its set -e and noclobber
# out of the rest. Names containing a line break are not listed.
STATE_FUNCTIONS = r"""__sandcell_dump() {
  { printf 'o\0\0'; shopt -p; set +o; printf '\0'; } >"$1" 2>/dev/null
  local - __sandcell_name; set +euC
  {
    while IFS= read -r __sandcell_name; do
      printf 'v\0%s\0' "$__sandcell_name"; declare -p -- "$__sandcell_name"; printf '\0'
    done < <(compgen -v)
    printf 'w\0\0%s\0' "$PWD"
    while IFS= read -r __sandcell_name; do
      printf 'f\0%s\0' "$__sandcell_name"; declare -pF -- "$__sandcell_name"; declare -f -- "$__sandcell_name"; printf '\0'
    done < <(compgen -A function)
    while IFS= read -r __sandcell_name; do
      printf 'a\0%s\0' "$__sandcell_name"; alias -- "$__sandcell_name"; printf '\0'
    done < <(compgen -a)
    printf 'j\0\0'; jobs -r; printf '\0'
    printf 'e\0\0\0'
  } >>"$1" 2>/dev/null
}
__sandcell_loaded() { printf '\n\037%s %s\n' "$1" "$2"; }
readonly -f __sandcell_dump __sandcell_loaded
"""
STATE_MAGIC = b"# sandcell-bash-state 1\n"
STATE_COUNT = b"# execution-count "
# Bash's own variables (set, read-only or changing by themselves) and the
# working directory's, which is kept as a directory; names starting with
# BASH, COMP_ or __sandcell_ are left out as well.
SHELL_VARIABLES = frozenset(
    "_ COLUMNS DIRSTACK EPOCHREALTIME EPOCHSECONDS EUID FUNCNAME GROUPS HISTCMD LINENO LINES "
    "OLDPWD PIPESTATUS PPID PS0 PS1 PROMPT_COMMAND PWD RANDOM SECONDS SHELLOPTS SHLVL SRANDOM UID".split()
)
# What bash puts before its messages while a state is sourced.
LOAD_MESSAGE_PREFIX = re.compile(r"^bash: (?:line \d+: )?(?:(?:alias|cd|declare|set|shopt|unset): )?")


def user_variable(name):
    return name not in SHELL_VARIABLES and not name.startswith(("BASH", "COMP_", "__sandcell_"))


def read_records(dump):
    """The (kind, name, text) records of a dump (__sandcell_dump), read a
    piece at a time: a large variable is held once, not the whole state."""
    fields, pieces = [], []
    for chunk in iter(lambda: dump.read(1 << 20), b""):
        parts = chunk.split(b"\0")
        for part in parts[:-1]:
            pieces.append(part)
            fields.append(b"".join(pieces))
            pieces = []
            if len(fields) == 3:
                yield tuple(fields)
                fields = []
        pieces.append(parts[-1])


def write_state(records, baseline, out):
    """Writes what the dump holds that differs from a fresh shell's (the
    baseline: what the environment and bash set), as the bash a load sources,
    each item followed by `__sandcell_loaded $? NAME`, its report. Variables
    come first (no function or alias of the code's can stand in for `declare`
    yet), then the working directory, functions, aliases (after the function
    definitions, which they would rewrite), and options, errexit last (until
    then a failing item cannot end the shell). Returns (saved, skipped), or
    None for a dump the shell did not finish."""
    saved, skipped, present, options = [], [], set(), []

    def item(name, code):
        out.write(code if code.endswith(b"\n") else code + b"\n")
        out.write(b"__sandcell_loaded $? " + quote_for_bash(name) + b"\n")
        if name not in saved:
            saved.append(name)

    for kind, name, text in records:
        key = name.decode("utf-8", "replace")
        changed = baseline.get((kind, name)) != text
        if kind == b"v":
            present.add(name)
            if changed and user_variable(key):
                # One of the environment's goes first: declare would keep an attribute it has lost (export).
                unset = b"builtin unset -v -- " + name + b"\n" if (kind, name) in baseline else b""
                item(key, unset + text)
        elif kind == b"w":
            for gone_kind, gone in baseline:
                if gone_kind == b"v" and gone not in present and user_variable(gone.decode("utf-8", "replace")):
                    item(gone.decode("utf-8", "replace"), b"builtin unset -v -- " + gone)
            item("(working directory)", b"builtin cd -- " + quote_for_bash(text))
        elif kind == b"f" and changed and not key.startswith("__sandcell_"):
            attributes, _, definition = text.partition(b"\n")  # `declare -fx NAME`, then the definition
            item(key, definition)
            flags = attributes.split(b" ")[1][2:]
            if flags:
                item(key, b"builtin declare -f" + flags + b" -- " + quote_for_bash(name))
        elif kind == b"a" and changed:
            item("alias " + key, b"builtin alias -- " + text[len(b"alias ") :])
        elif kind == b"o":
            fresh = set(baseline.get((kind, name), b"").splitlines())
            options = [line for line in text.splitlines() if line not in fresh]
        elif kind == b"j":
            for job in re.findall(rb"^\[(\d+)\]", text, re.MULTILINE):
                skipped.append({"name": "job %" + job.decode(), "reason": "a running process is not kept"})
        elif kind == b"e":
            for line in sorted(options, key=lambda line: line == b"set -o errexit"):
                item("(options)", b"builtin " + line)
            out.write(b"__sandcell_loaded 0 ''\n")  # the end: a load that stopped before it says so
            return saved, skipped
    return None


def read_load_report(report):
    """What a load's markers (__sandcell_loaded) say, as (restored, skipped):
    bash's messages before a marker are the reasons its item failed."""
    restored, failed, messages, finished = {}, {}, [], False
    for line in report:
        line = line.rstrip("\n")
        if not line.startswith("\x1f"):
            if line:
                messages.append(LOAD_MESSAGE_PREFIX.sub("", line))
            continue
        status, _, name = line[1:].partition(" ")
        if not name:
            finished = True
        elif status != "0":
            failed.setdefault(name, []).extend(messages or ["exit status " + status])
        else:
            restored[name] = True
        messages = []
    skipped = [{"name": name, "reason": "; ".join(reasons)} for name, reasons in failed.items()]
    if not finished:
        skipped.append({"name": "(the rest of the state)", "reason": "; ".join(messages) or "the load stopped"})
    return [name for name in restored if name not in failed], skipped


def save(dump, path, execution_count, baseline):
    """Writes the state file at `path` from the shell's dump: its header, then
    write_state's bash. Returns write_state's (saved, skipped), or None."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    with open(dump, "rb") as dumped, open(os.open(path, flags, 0o600), "wb") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(STATE_MAGIC + STATE_COUNT + b"%d\n" % execution_count)
        return write_state(read_records(dumped), baseline, out)


def saved_count(path):
    """The execution count in the header of the file at `path`, or None when
    it does not start as a bash state does (nothing else of it is read)."""
    with open(path, "rb") as state:
        magic, count = state.readline(len(STATE_MAGIC)), state.readline(64)
    count = re.fullmatch(re.escape(STATE_COUNT) + rb"(\d+)\n", count)
    if magic != STATE_MAGIC or not count:
        return None
    return int(count.group(1))
