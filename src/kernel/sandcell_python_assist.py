"""Completion and inspection for the Python kernel (sandcell_kernel.py): what
an editor or a Jupyter client asks while its user types. IPython does the
work: its completer (the provisional `Completer.completions` API, which
merges Jedi's completions with IPython's own matchers for dict keys, paths
and magics) and its inspector (`object_inspect_mime`, what `obj?` shows).

Positions are counted in code points, as Jupyter's protocol (5.2+) counts
them; a Python str is indexed in code points, so they need no conversion.
What goes back is bounded here, and again on the host, which trusts none of it.
"""

import itertools

# Enough for any menu a person scrolls; `import <tab>` would list every module.
MATCH_LIMIT = 1000
MATCH_CHARS = 1000
SIGNATURE_CHARS = 1000
# Inspection text: a long docstring is kept, a runaway __repr__ is cut.
INSPECT_CHARS = 256 * 1024


def _cursor(code, cursor):
    """The cursor within code: a position past its end (or a bad one) is its end."""
    if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0 or cursor > len(code):
        return len(code)
    return cursor


def complete(shell, code, cursor):
    """{matches, cursorStart, cursorEnd, metadata}: what may replace
    code[cursorStart:cursorEnd]. The metadata carries each match's type and
    signature under `_jupyter_types_experimental`, as ipykernel sends it
    (JupyterLab shows them in its completer)."""
    from IPython.core.completer import provisionalcompleter, rectify_completions

    cursor = _cursor(code, cursor)
    with provisionalcompleter():
        found = itertools.islice(shell.Completer.completions(code, cursor), MATCH_LIMIT)
        # Rectified, every completion replaces the same span of the code.
        completions = [item for item in rectify_completions(code, list(found)) if len(item.text) <= MATCH_CHARS]
    if not completions:
        return {"matches": [], "cursorStart": cursor, "cursorEnd": cursor, "metadata": {}}
    types = [
        {
            "start": item.start,
            "end": item.end,
            "text": item.text,
            "type": item.type or "",
            "signature": (item.signature or "")[:SIGNATURE_CHARS],
        }
        for item in completions
    ]
    return {
        "matches": [item.text for item in completions],
        "cursorStart": completions[0].start,
        "cursorEnd": completions[0].end,
        "metadata": {"_jupyter_types_experimental": types},
    }


def inspect(shell, code, cursor, detail_level):
    """{found, data, metadata}: IPython's help on the name at (or just before)
    the cursor, as a MIME bundle (text/plain, and text/html where IPython
    gives it); detail level 1 adds the source, as `obj??` does."""
    from IPython.utils.tokenutil import token_at_cursor

    cursor = _cursor(code, cursor)
    name = token_at_cursor(code, cursor)
    empty = {"found": False, "data": {}, "metadata": {}}
    if not name:
        return empty
    try:
        bundle = shell.object_inspect_mime(name, detail_level=1 if detail_level == 1 else 0)
    except Exception:  # KeyError for a name that is not defined; anything else an object's own fault
        return empty
    data = {mime: value[:INSPECT_CHARS] for mime, value in bundle.items() if isinstance(value, str)}
    if "text/plain" not in data:
        return empty
    return {"found": True, "data": data, "metadata": {}}
