"""The OpenAI Agents SDK (`openai-agents` with its `e2b` extra) running a `SandboxAgent` through its
E2B sandbox client (`agents.extensions.sandbox.e2b`) against sandcell, as a user's code does it:
E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY in the environment, the model on OPENAI_BASE_URL (the
test's scripted Chat Completions server), `Runner.run` with `RunConfig(sandbox=...)`, nothing else.
`--root PATH` gives the run a `Manifest(root=PATH)`; without it the SDK's default manifest holds.
Prints one JSON object of what it saw (test/python/openai-agents-e2b.test.ts asserts on it)."""

import argparse
import asyncio
import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--root", default=None)
root = parser.parse_args().root

# The runner keeps the workspace it persists at the end under XDG_STATE_HOME (its default local
# snapshot): a directory of this run's own, to read back afterwards.
state_home = tempfile.mkdtemp(prefix="openai-agents-e2b-")
os.environ["XDG_STATE_HOME"] = state_home

from e2b import AsyncSandbox, SandboxQuery, SandboxState  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from agents import OpenAIChatCompletionsModel, RunConfig, RunHooks, Runner, set_tracing_disabled  # noqa: E402
from agents.extensions.sandbox.e2b import E2BSandboxClient, E2BSandboxClientOptions  # noqa: E402
from agents.sandbox import Manifest, SandboxAgent, SandboxRunConfig  # noqa: E402
from agents.sandbox.capabilities import Shell  # noqa: E402

set_tracing_disabled(True)
SUITE = {"suite": "openai-agents"}
BOTH_STATES = [SandboxState.RUNNING, SandboxState.PAUSED]
seen = {"root": root, "tools": [], "during": []}


async def listed(**query):
    """The ids sandcell lists for this suite's metadata (in `query`'s states)."""
    paginator = AsyncSandbox.list(query=SandboxQuery(metadata=SUITE, **query))
    return [{"id": info.sandbox_id, "state": str(info.state.value), "template": info.template_id} for info in await paginator.next_items()]


class Watch(RunHooks):
    """Before every tool: which sandbox the tool's session is, and what sandcell lists right then."""

    async def on_tool_start(self, context, agent, tool):
        session = getattr(tool, "session", None)
        state = getattr(session, "state", None)
        seen["tools"].append({"tool": tool.name, "sandbox_id": getattr(state, "sandbox_id", None)})
        seen["during"].append(await listed(state=BOTH_STATES))


async def main():
    model = OpenAIChatCompletionsModel(
        model="scripted-model",
        openai_client=AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="sk-scripted"),
    )
    agent = SandboxAgent(
        name="Analyst",
        instructions="Answer with what the sandbox computed.",
        model=model,
        # The default capabilities add Filesystem, whose `apply_patch` is a freeform (custom) tool
        # that the SDK refuses to send over Chat Completions; the shell is what this run needs.
        capabilities=[Shell()],
    )
    sandbox = SandboxRunConfig(
        client=E2BSandboxClient(),
        options=E2BSandboxClientOptions(sandbox_type="e2b_code_interpreter", metadata=SUITE),
        manifest=Manifest(root=root) if root else None,
    )
    seen["before"] = await listed(state=BOTH_STATES)
    result = await Runner.run(
        agent,
        "What are the total units sold, and what does notes.txt hold?",
        run_config=RunConfig(sandbox=sandbox),
        hooks=Watch(),
    )
    seen["final_output"] = result.final_output
    seen["after"] = await listed(state=BOTH_STATES)

    # The workspace the runner persisted when it stopped the session (a tar of the manifest root).
    archives = sorted(Path(state_home).rglob("*.tar"))
    seen["snapshot"] = {"archives": len(archives)}
    if archives:
        with tarfile.open(archives[0]) as archive:
            names = sorted(name.removeprefix("./") for name in archive.getnames())
            notes = archive.extractfile("./notes.txt") if "notes.txt" in names else None
            seen["snapshot"].update(names=names, notes=notes.read().decode() if notes else None)
        # A new sandbox given that workspace back, as a resumed run's is: the client writes the
        # archive to /tmp with the file API and unpacks it with tar there.
        client = E2BSandboxClient()
        session = await client.create(
            manifest=Manifest(root=root) if root else None,
            options=E2BSandboxClientOptions(sandbox_type="e2b_code_interpreter", metadata=SUITE),
        )
        try:
            await session.start()
            with open(archives[0], "rb") as archive:
                await session.hydrate_workspace(archive)
            restored = await session.exec("cat notes.txt && pwd && ls /tmp | grep -c sandbox-hydrate || true")
            seen["hydrated"] = {"exit_code": restored.exit_code, "stdout": restored.stdout.decode()}
            # The SDK's write_stdin tool: a command on a PTY (pty.create, then its input), written to again.
            started = await session.pty_exec_start("bash", tty=True, yield_time_s=1)
            typed = await session.pty_write_stdin(
                session_id=started.process_id, chars="echo tty-$((6*7)); tty\n", yield_time_s=2
            )
            seen["pty"] = (started.output + typed.output).decode("utf-8", "replace")
        finally:
            await session.shutdown()
        seen["after_hydrate"] = await listed(state=BOTH_STATES)


try:
    asyncio.run(main())
finally:
    shutil.rmtree(state_home, ignore_errors=True)
print(json.dumps(seen))
sys.exit(0)
