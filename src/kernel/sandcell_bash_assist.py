"""Completion and inspection for the bash kernel (sandcell_bash_kernel.py),
answered by the live shell itself, between cells: compgen for commands
(aliases, functions, builtins, keywords and programs on PATH), variables and
files, relative to the shell's own working directory; `type` and `help` (or
`declare -p` for a variable) for inspection. The shell writes its answer to a
file of the kernel's; the word at the cursor is found here.

Positions count code points (a Python str's indexes), as Jupyter's do.
"""

import os

MATCH_LIMIT = 1000
MATCH_CHARS = 1000
INSPECT_BYTES = 256 * 1024

# Characters that end a word for completion: blanks, operators, quotes, and
# `=` and `:` so that VAR=/pa and PATH-like lists complete their last part.
WORD_BREAKS = frozenset(" \t\n;|&()<>'\"`=:")
# Words after which a command name comes.
COMMAND_KEYWORDS = frozenset(("if", "then", "else", "elif", "while", "until", "do", "!", "time", "exec", "command", "sudo", "xargs"))

# Defined in the shell by its rc file (read-only there, like the prompt's).
RC_FUNCTIONS = r"""__sandcell_complete() {
  case $1 in
    command) compgen -c -- "$2" ;;
    variable) compgen -v -- "$2" ;;
    *) local __sandcell_file
       while IFS= read -r __sandcell_file; do
         [[ -d $__sandcell_file ]] && __sandcell_file+=/
         printf '%s\n' "$__sandcell_file"
       done < <(compgen -f -- "$2") ;;
  esac >"$3" 2>/dev/null
}
__sandcell_inspect() {
  if [[ $1 == '$'* ]]; then declare -p -- "${1#\$}"
  else
    type -- "$1" || return
    case $(type -t -- "$1") in builtin|keyword) help -- "$1" ;; esac
  fi >"$2" 2>/dev/null
}
readonly -f __sandcell_complete __sandcell_inspect
"""


def _cursor(code, cursor):
    if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0 or cursor > len(code):
        return len(code)
    return cursor


def _word_start(code, cursor):
    start = cursor
    while start > 0 and code[start - 1] not in WORD_BREAKS:
        start -= 1
    return start


def _in_command_position(before):
    """Whether a word starting after `before` names a command."""
    text = before.rstrip(" \t")
    if not text or text[-1] in ";|&(`{\n":
        return True
    return text.split()[-1] in COMMAND_KEYWORDS


def completion_request(code, cursor):
    """(kind, word, cursorStart, cursorEnd) for the word before the cursor:
    kind is `variable` (after `$` or `${`), `command` (a first word without
    a slash) or `file`."""
    cursor = _cursor(code, cursor)
    start = _word_start(code, cursor)
    word = code[start:cursor]
    dollar = word.rfind("$")
    if dollar >= 0:
        name_start = start + dollar + 1
        if code[name_start : name_start + 1] == "{":
            name_start += 1
        return "variable", code[name_start:cursor], name_start, cursor
    if "/" not in word and _in_command_position(code[:start]):
        return "command", word, start, cursor
    return "file", word, start, cursor


def inspection_word(code, cursor):
    """The whole word at (or just before) the cursor, `$NAME` for a variable."""
    cursor = _cursor(code, cursor)
    start = _word_start(code, cursor)
    end = cursor
    while end < len(code) and code[end] not in WORD_BREAKS:
        end += 1
    word = code[start:end]
    dollar = word.rfind("$")
    if dollar >= 0:
        name = word[dollar + 1 :].strip("{}")
        return "$" + name if name else ""
    return word


def read_matches(path):
    """The shell's answer: distinct matches in its order (compgen -c lists a
    name once per place it is found), within the bounds."""
    matches = []
    seen = set()
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as answer:
            for line in answer:
                match = line.rstrip("\n")
                if match and match not in seen and len(match) <= MATCH_CHARS:
                    seen.add(match)
                    matches.append(match)
                    if len(matches) == MATCH_LIMIT:
                        break
    except OSError:
        return []
    return sorted(matches)


def read_inspection(path):
    try:
        with open(path, "rb") as answer:
            text = answer.read(INSPECT_BYTES).decode("utf-8", "replace")
        os.unlink(path)
    except OSError:
        text = ""
    if not text.strip():
        return {"found": False, "data": {}, "metadata": {}}
    return {"found": True, "data": {"text/plain": text}, "metadata": {}}
