"""E2B's Python SDK (`e2b-code-interpreter`, sync `Sandbox`) against sandcell, as a user's code
drives it: the environment gives E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY, nothing else.
Prints one JSON object of what it saw (test/python/e2b-python-sdk.test.ts asserts on it)."""

import base64
import json
import os
import time
import urllib.parse
import urllib.request

from e2b import PtySize, SandboxQuery, SandboxState
from e2b.exceptions import NotFoundException
from e2b_code_interpreter import Sandbox

seen = {}
sandbox = Sandbox.create(metadata={"suite": "python-sync"}, envs={"GREETING": "hello"}, timeout=300)
seen["id"] = sandbox.sandbox_id

# State between calls, and the callbacks as the code runs.
stdout, stderr, results = [], [], []
sandbox.run_code("import os\nimport sys\nimport pandas as pd\nsales = pd.DataFrame({'units': [120, 150, 90]})")
execution = sandbox.run_code(
    "print('months:', len(sales))\nprint('careful', file=sys.stderr)\nint(sales.units.sum())",
    on_stdout=lambda message: stdout.append(message.line),
    on_stderr=lambda message: stderr.append(message.line),
    on_result=lambda result: results.append(result.text),
)
seen["state"] = {"text": execution.text, "stdout": stdout, "stderr": stderr, "results": results}

# Rich results: a chart, a DataFrame, JSON.
chart = sandbox.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
png = chart.results[0].png if chart.results else None
seen["chart"] = {"count": len(chart.results), "png_magic": base64.b64decode(png)[:8].hex() if png else None}
table = sandbox.run_code("sales")
seen["table"] = {"html": table.results[0].html, "main": table.results[0].is_main_result}
structured = sandbox.run_code("from IPython.display import JSON\nJSON({'rows': [1, 2]})")
seen["json"] = structured.results[0].json

# An error, with its traceback, and the session still there after it.
failed = sandbox.run_code("def divide(a, b):\n    return a / b\ndivide(1, 0)")
seen["error"] = {"name": failed.error.name, "value": failed.error.value, "traceback": failed.error.traceback}
seen["after_error"] = sandbox.run_code("len(sales)").text

# Other languages, and a context of its own.
seen["javascript"] = sandbox.run_code("const answer = 6 * 7; answer", language="javascript").text
seen["bash"] = "".join(sandbox.run_code('echo "$GREETING"', language="bash").logs.stdout)
seen["r"] = sandbox.run_code("sum(c(1, 2, 3))", language="r").text
context = sandbox.create_code_context(cwd="/tmp", language="python")
sandbox.run_code("import os\nmine = 'context'", context=context)
seen["context"] = {
    "cwd": sandbox.run_code("os.getcwd()", context=context).text,
    "own": sandbox.run_code("mine", context=context).text,
    "default_lacks_it": sandbox.run_code("mine").error.name,
    "listed": context.id in [listed.id for listed in sandbox.list_code_contexts()],
}
sandbox.remove_code_context(context)
seen["context"]["removed"] = context.id not in [listed.id for listed in sandbox.list_code_contexts()]

# Files: write, read (text and bytes), list, make_dir, rename, remove, and one the code made.
sandbox.files.write("/home/user/notes.txt", "kept between calls")
sandbox.files.write("/home/user/blob.bin", b"\x00\x01\xff")
seen["files"] = {
    "read_by_code": sandbox.run_code("open('notes.txt').read()").text,
    "read": sandbox.files.read("/home/user/notes.txt"),
    "bytes": list(sandbox.files.read("/home/user/blob.bin", format="bytes")),
    "made_dir": sandbox.files.make_dir("/home/user/reports/2026"),
}
sandbox.run_code("sales.to_csv('reports/2026/sales.csv', index=False)")
seen["files"]["listed"] = sorted(entry.path for entry in sandbox.files.list("/home/user/reports", depth=2))
seen["files"]["csv"] = sandbox.files.read("/home/user/reports/2026/sales.csv")
sandbox.files.rename("/home/user/notes.txt", "/home/user/kept.txt")
seen["files"]["renamed"] = [sandbox.files.exists("/home/user/notes.txt"), sandbox.files.exists("/home/user/kept.txt")]
sandbox.files.remove("/home/user/kept.txt")
seen["files"]["removed"] = sandbox.files.exists("/home/user/kept.txt")
try:
    sandbox.files.read("/home/user/never-written.txt")
    seen["files"]["missing"] = None
except NotFoundException as error:
    seen["files"]["missing"] = str(error)

# A watch on a folder (the sync SDK polls it: CreateWatcher, GetWatcherEvents, RemoveWatcher).
sandbox.files.make_dir("/home/user/watched")
watch = sandbox.files.watch_dir("/home/user/watched", recursive=True)
watched = []


def watch_until(count):
    """Asks for new events until `count` have come (the server lists every half second), for 15 s at most."""
    for _ in range(75):
        watched.extend(f"{event.type.value} {event.name}" for event in watch.get_new_events())
        if len(watched) >= count:
            return
        time.sleep(0.2)


sandbox.files.write("/home/user/watched/draft.txt", "first")
sandbox.run_code("os.makedirs('watched/deeper')\nopen('watched/deeper/made.txt', 'w').write('by code')")
watch_until(5)
sandbox.files.remove("/home/user/watched/draft.txt")
watch_until(6)
watch.stop()
try:
    watch.get_new_events()
    seen["watch_after_stop"] = None
except Exception as error:  # SandboxException
    seen["watch_after_stop"] = str(error)
seen["watch"] = sorted(watched[:5]) + watched[5:]

# Commands: run, streamed, stdin, background, list and kill.
lines = []
ran = sandbox.commands.run('echo "$GREETING"; for i in 1 2 3; do echo "line $i"; done', on_stdout=lines.append)
seen["command"] = {"stdout": ran.stdout, "exit_code": ran.exit_code, "streamed": "".join(lines)}
try:
    sandbox.commands.run("echo oops >&2; exit 3")
except Exception as error:  # CommandExitException
    seen["command"]["failure"] = {"type": type(error).__name__, "exit_code": error.exit_code, "stderr": error.stderr}
reader = sandbox.commands.run("read line; echo got $line", background=True, stdin=True)
sandbox.commands.send_stdin(reader.pid, "abc\n")
seen["command"]["stdin"] = reader.wait().stdout
sleeper = sandbox.commands.run("sleep 120", background=True)
seen["command"]["listed"] = sleeper.pid in [process.pid for process in sandbox.commands.list()]
seen["command"]["killed"] = sandbox.commands.kill(sleeper.pid)
seen["command"]["after_kill"] = sleeper.pid in [process.pid for process in sandbox.commands.list()]

# Everything runs as the sandbox's one user: asking for root is refused, not run as someone else.
seen["command"]["as_user"] = sandbox.commands.run("echo $((6 * 7))", user="user").stdout
try:
    sandbox.commands.run("id -u", user="root")
    seen["as_root"] = None
except Exception as error:
    seen["as_root"] = {"type": type(error).__name__, "message": str(error)}

# An app on a port, at the host name get_host gives: sent in Host to the server's address, as a browser does.
sandbox.files.write("/home/user/site/index.html", "<p>served from the sandbox</p>")
sandbox.commands.run("python3 -m http.server 8000 --directory /home/user/site", background=True)
host = sandbox.get_host(8000)
server = urllib.parse.urlsplit(os.environ["E2B_API_URL"]).netloc
page = None
for _ in range(100):
    try:
        request = urllib.request.Request(f"http://{server}/index.html", headers={"Host": host})
        page = urllib.request.urlopen(request, timeout=5).read().decode()
        break
    except OSError:
        time.sleep(0.1)
seen["port"] = {"host": host, "page": page}

# A PTY: typed into with send_stdin and with stream_input (envd's StreamInput), resized, then ended by its exit.
pty = sandbox.pty.create(PtySize(rows=24, cols=80), timeout=0)
sandbox.pty.send_stdin(pty.pid, b"echo pty-$((6*7)); tty\n")
sandbox.pty.resize(pty.pid, PtySize(rows=30, cols=100))
sandbox.pty.stream_input(pty.pid, [b"stty size; ", "echo streamed-$((2+3))\n", b"exit 0\n"])
screen = bytearray()
pty.wait(on_pty=lambda data: screen.extend(data))
seen["pty"] = screen.decode("utf-8", "replace")

# Lifetime, information, and the list with its filters.
sandbox.set_timeout(600)
info = sandbox.get_info()
seen["info"] = {"metadata": info.metadata, "template": info.template_id, "seconds_left": (info.end_at - info.started_at).total_seconds()}
seen["running"] = sandbox.is_running()
mine = Sandbox.list(query=SandboxQuery(metadata={"suite": "python-sync"})).next_items()
others = Sandbox.list(query=SandboxQuery(metadata={"suite": "nobody"})).next_items()
seen["list"] = {"mine": [listed.sandbox_id for listed in mine], "others": len(others)}

# A snapshot and a fork keep the variables; a pause ends it, a connect brings it back.
sandbox.run_code("kept = 'from before'")
snapshot = sandbox.create_snapshot()
seen["snapshot"] = snapshot.snapshot_id in [listed.snapshot_id for listed in sandbox.list_snapshots().next_items()]
from_snapshot = Sandbox.create(snapshot.snapshot_id)
seen["from_snapshot"] = from_snapshot.run_code("kept").text
from_snapshot.kill()
forks = sandbox.fork()
seen["fork"] = [fork.run_code("kept").text if isinstance(fork, Sandbox) else repr(fork) for fork in forks]
for fork in forks:
    if isinstance(fork, Sandbox):
        fork.kill()
sandbox.pause()
paused = [listed for listed in Sandbox.list(query=SandboxQuery(state=[SandboxState.PAUSED])).next_items()]
seen["paused_listed"] = sandbox.sandbox_id in [listed.sandbox_id for listed in paused]
resumed = Sandbox.connect(sandbox.sandbox_id)
seen["resumed"] = {"kept": resumed.run_code("kept").text, "sales": resumed.run_code("len(sales)").text}

seen["killed"] = resumed.kill()
seen["gone"] = sandbox.sandbox_id not in [listed.sandbox_id for listed in Sandbox.list().next_items()]
Sandbox.delete_snapshot(snapshot.snapshot_id)
print(json.dumps(seen))
