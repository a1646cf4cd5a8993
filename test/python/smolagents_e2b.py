"""smolagents' `CodeAgent` with `executor_type="e2b"` (smolagents 1.26, e2b-code-interpreter 2.11),
unmodified, against sandcell: the environment points E2B's SDK at sandcell (E2B_API_URL,
E2B_SANDBOX_URL, E2B_API_KEY) and the agent's `OpenAIModel` at a scripted fake model
(FAKE_OPENAI_BASE_URL). The agent creates its sandbox, ships its variables (`additional_args`), its
tools and the final_answer machinery into it, runs three steps of the model's code there, and
`agent.cleanup()` kills the sandbox. A second agent, with `additional_authorized_imports`, shows
what its `pip install` does in a sandbox without internet.
Prints one JSON object of what it saw (test/python/smolagents-e2b.test.ts asserts on it)."""

import io
import json
import os
import socket
import sys
import time

from e2b.exceptions import NotFoundException
from e2b_code_interpreter import Sandbox
from rich.console import Console
from smolagents import AgentLogger, CodeAgent, LogLevel, OpenAIModel, tool
from smolagents.utils import AgentError


@tool
def vat(amount: float) -> dict:
    """Adds 20% VAT to a net amount, and says where it was computed.

    Args:
        amount: the net amount
    """
    import socket

    return {"gross": round(amount * 1.2, 2), "host": socket.gethostname()}


def recording_logger():
    """An AgentLogger whose console writes to a buffer: what a user would see in the terminal."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, highlight=False, color_system=None, force_terminal=False)
    return AgentLogger(level=LogLevel.DEBUG, console=console), buffer


def sandbox_ids():
    return [listed.sandbox_id for listed in Sandbox.list().next_items()]


def info_after_kill(sandbox_id):
    try:
        Sandbox.get_info(sandbox_id)
        return "still there"
    except NotFoundException as error:
        return type(error).__name__
    except Exception as error:  # anything else is a mismatch the test shows
        return f"{type(error).__name__}: {error}"


seen = {"local_host": socket.gethostname()}
model = OpenAIModel(model_id="scripted-model", api_base=os.environ["FAKE_OPENAI_BASE_URL"], api_key="not-needed")

# The agent of the proof: its executor makes the sandbox when the agent is constructed.
logger, log = recording_logger()
agent = CodeAgent(tools=[vat], model=model, executor_type="e2b", logger=logger, max_steps=5)
executor = agent.python_executor
sandbox_id = executor.sandbox.sandbox_id
info = Sandbox.get_info(sandbox_id)
seen["sandbox"] = {
    "executor": type(executor).__name__,
    "id": sandbox_id,
    "listed": sandbox_id in sandbox_ids(),
    "template": info.template_id,
    "state": str(getattr(info.state, "value", info.state)),
}

answer = agent.run(
    "Which region sold the most units, and what is that with VAT?",
    additional_args={"threshold": 100},
)
seen["answer"] = {"repr": repr(answer), "type": type(answer).__name__}
seen["steps"] = [
    {"code": step.code_action, "error": type(step.error).__name__ if step.error else None}
    for step in agent.memory.steps
    if hasattr(step, "code_action")
]
seen["still_listed_after_run"] = sandbox_id in sandbox_ids()

agent.cleanup()
seen["after_cleanup"] = {
    "executor_has_sandbox": hasattr(executor, "sandbox"),
    "listed": sandbox_id in sandbox_ids(),
    "get_info": info_after_kill(sandbox_id),
}
# What the executor printed: the pip install that send_tools runs for final_answer's imports.
seen["log"] = log.getvalue()

# additional_authorized_imports: the executor runs `!pip install some_package` in the new sandbox.
logger, log = recording_logger()
started = time.monotonic()
try:
    importer = CodeAgent(
        tools=[],
        model=model,
        executor_type="e2b",
        additional_authorized_imports=["some_package"],
        logger=logger,
    )
    seen["imports"] = {"constructed": True, "seconds": round(time.monotonic() - started, 1)}
    importer_id = importer.python_executor.sandbox.sandbox_id
    seen["imports"]["listed"] = importer_id in sandbox_ids()
    seen["imports"]["installed_packages"] = importer.python_executor.installed_packages
    try:
        importer.python_executor("import some_package")
        seen["imports"]["import"] = "imported"
    except AgentError as error:
        seen["imports"]["import"] = str(error)
    seen["imports"]["still_runs"] = importer.python_executor("print(6 * 7)").logs
    importer.cleanup()
    seen["imports"]["listed_after_cleanup"] = importer_id in sandbox_ids()
except Exception as error:
    seen["imports"] = {"constructed": False, "error": f"{type(error).__name__}: {error}"}
seen["imports"]["log"] = log.getvalue()

print(json.dumps(seen))
sys.exit(0)
