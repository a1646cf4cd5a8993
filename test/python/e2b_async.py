"""E2B's Python SDK (`e2b-code-interpreter`, `AsyncSandbox`) against sandcell: what e2b_sync.py
does with the sync `Sandbox`, awaited, with the same environment and the same JSON of what it saw
(test/python/e2b-python-sdk.test.ts asserts on both alike)."""

import asyncio
import base64
import json
import os
import sys

from e2b import SandboxQuery, SandboxState
from e2b.exceptions import NotFoundException
from e2b_code_interpreter import AsyncSandbox


async def ids(paginator):
    return [listed.sandbox_id for listed in await paginator.next_items()]


async def main():
    seen = {}
    sandbox = await AsyncSandbox.create(metadata={"suite": "python-async"}, envs={"GREETING": "hello"}, timeout=300)
    seen["id"] = sandbox.sandbox_id

    stdout, stderr, results = [], [], []
    await sandbox.run_code("import sys\nimport pandas as pd\nsales = pd.DataFrame({'units': [120, 150, 90]})")
    execution = await sandbox.run_code(
        "print('months:', len(sales))\nprint('careful', file=sys.stderr)\nint(sales.units.sum())",
        on_stdout=lambda message: stdout.append(message.line),
        on_stderr=lambda message: stderr.append(message.line),
        on_result=lambda result: results.append(result.text),
    )
    seen["state"] = {"text": execution.text, "stdout": stdout, "stderr": stderr, "results": results}

    chart = await sandbox.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    png = chart.results[0].png if chart.results else None
    seen["chart"] = {"count": len(chart.results), "png_magic": base64.b64decode(png)[:8].hex() if png else None}
    table = await sandbox.run_code("sales")
    seen["table"] = {"html": table.results[0].html, "main": table.results[0].is_main_result}
    structured = await sandbox.run_code("from IPython.display import JSON\nJSON({'rows': [1, 2]})")
    seen["json"] = structured.results[0].json

    failed = await sandbox.run_code("def divide(a, b):\n    return a / b\ndivide(1, 0)")
    seen["error"] = {"name": failed.error.name, "value": failed.error.value, "traceback": failed.error.traceback}
    seen["after_error"] = (await sandbox.run_code("len(sales)")).text

    seen["javascript"] = (await sandbox.run_code("const answer = 6 * 7; answer", language="javascript")).text
    seen["bash"] = "".join((await sandbox.run_code('echo "$GREETING"', language="bash")).logs.stdout)
    seen["r"] = (await sandbox.run_code("sum(c(1, 2, 3))", language="r")).text
    context = await sandbox.create_code_context(cwd="/tmp", language="python")
    await sandbox.run_code("import os\nmine = 'context'", context=context)
    seen["context"] = {
        "cwd": (await sandbox.run_code("os.getcwd()", context=context)).text,
        "own": (await sandbox.run_code("mine", context=context)).text,
        "default_lacks_it": (await sandbox.run_code("mine")).error.name,
        "listed": context.id in [listed.id for listed in await sandbox.list_code_contexts()],
    }
    await sandbox.remove_code_context(context)
    seen["context"]["removed"] = context.id not in [listed.id for listed in await sandbox.list_code_contexts()]

    files = sandbox.files
    await files.write("/home/user/notes.txt", "kept between calls")
    await files.write("/home/user/blob.bin", b"\x00\x01\xff")
    seen["files"] = {
        "read_by_code": (await sandbox.run_code("open('notes.txt').read()")).text,
        "read": await files.read("/home/user/notes.txt"),
        "bytes": list(await files.read("/home/user/blob.bin", format="bytes")),
        "made_dir": await files.make_dir("/home/user/reports/2026"),
    }
    await sandbox.run_code("sales.to_csv('reports/2026/sales.csv', index=False)")
    seen["files"]["listed"] = sorted(entry.path for entry in await files.list("/home/user/reports", depth=2))
    seen["files"]["csv"] = await files.read("/home/user/reports/2026/sales.csv")
    await files.rename("/home/user/notes.txt", "/home/user/kept.txt")
    seen["files"]["renamed"] = [await files.exists("/home/user/notes.txt"), await files.exists("/home/user/kept.txt")]
    await files.remove("/home/user/kept.txt")
    seen["files"]["removed"] = await files.exists("/home/user/kept.txt")
    try:
        await files.read("/home/user/never-written.txt")
        seen["files"]["missing"] = None
    except NotFoundException as error:
        seen["files"]["missing"] = str(error)

    # A watch on a folder (the async SDK streams it: WatchDir), its events to a callback.
    await files.make_dir("/home/user/watched")
    watched = []
    arrived = asyncio.Event()

    def on_event(event):
        watched.append(f"{event.type.value} {event.name}")
        if len(watched) in (5, 6):
            arrived.set()

    watch = await files.watch_dir("/home/user/watched", on_event=on_event, recursive=True)
    await files.write("/home/user/watched/draft.txt", "first")
    await sandbox.run_code("import os\nos.makedirs('watched/deeper')\nopen('watched/deeper/made.txt', 'w').write('by code')")
    await asyncio.wait_for(arrived.wait(), 15)
    arrived.clear()
    await files.remove("/home/user/watched/draft.txt")
    await asyncio.wait_for(arrived.wait(), 15)
    await watch.stop()
    seen["watch"] = sorted(watched[:5]) + watched[5:]

    commands = sandbox.commands
    lines = []
    ran = await commands.run('echo "$GREETING"; for i in 1 2 3; do echo "line $i"; done', on_stdout=lines.append)
    seen["command"] = {"stdout": ran.stdout, "exit_code": ran.exit_code, "streamed": "".join(lines)}
    try:
        await commands.run("echo oops >&2; exit 3")
    except Exception as error:  # CommandExitException
        seen["command"]["failure"] = {"type": type(error).__name__, "exit_code": error.exit_code, "stderr": error.stderr}
    reader = await commands.run("read line; echo got $line", background=True, stdin=True)
    await commands.send_stdin(reader.pid, "abc\n")
    seen["command"]["stdin"] = (await reader.wait()).stdout
    sleeper = await commands.run("sleep 120", background=True)
    seen["command"]["listed"] = sleeper.pid in [process.pid for process in await commands.list()]
    seen["command"]["killed"] = await commands.kill(sleeper.pid)
    seen["command"]["after_kill"] = sleeper.pid in [process.pid for process in await commands.list()]

    seen["command"]["as_user"] = (await commands.run("echo $((6 * 7))", user="user")).stdout

    await sandbox.set_timeout(600)
    info = await sandbox.get_info()
    seen["info"] = {"metadata": info.metadata, "template": info.template_id, "seconds_left": (info.end_at - info.started_at).total_seconds()}
    seen["running"] = await sandbox.is_running()
    seen["list"] = {
        "mine": await ids(AsyncSandbox.list(query=SandboxQuery(metadata={"suite": "python-async"}))),
        "others": len(await ids(AsyncSandbox.list(query=SandboxQuery(metadata={"suite": "nobody"})))),
    }

    await sandbox.run_code("kept = 'from before'")
    snapshot = await sandbox.create_snapshot()
    seen["snapshot"] = snapshot.snapshot_id in [listed.snapshot_id for listed in await sandbox.list_snapshots().next_items()]
    from_snapshot = await AsyncSandbox.create(snapshot.snapshot_id)
    seen["from_snapshot"] = (await from_snapshot.run_code("kept")).text
    await from_snapshot.kill()
    forks = await sandbox.fork()
    seen["fork"] = [(await fork.run_code("kept")).text if isinstance(fork, AsyncSandbox) else repr(fork) for fork in forks]
    for fork in forks:
        if isinstance(fork, AsyncSandbox):
            await fork.kill()
    await sandbox.pause()
    seen["paused_listed"] = sandbox.sandbox_id in await ids(AsyncSandbox.list(query=SandboxQuery(state=[SandboxState.PAUSED])))
    resumed = await AsyncSandbox.connect(sandbox.sandbox_id)
    seen["resumed"] = {"kept": (await resumed.run_code("kept")).text, "sales": (await resumed.run_code("len(sales)")).text}

    seen["killed"] = await resumed.kill()
    seen["gone"] = sandbox.sandbox_id not in await ids(AsyncSandbox.list())
    await AsyncSandbox.delete_snapshot(snapshot.snapshot_id)
    print(json.dumps(seen))


asyncio.run(main())
# Everything is said; leave without the interpreter's finalization, where a native extension the
# SDK's HTTP stack loads (zstandard's) aborts now and then (SIGABRT after a clean run, stderr empty).
sys.stdout.flush()
os._exit(0)
