"""LlamaIndex's `AzureCodeInterpreterToolSpec` (llama-index-tools-azure-code-interpreter) against
sandcell's /azure door, unmodified, set up as docs/azure.md tells a user: the pool management
endpoint is sandcell's /azure and the spec's `access_token_provider` is replaced by one that gives
a sandcell key. Its tools run inside a LlamaIndex `ReActAgent` whose model is
llama-index-llms-openai's `OpenAI` pointed at a scripted fake (OPENAI_BASE_URL); the spec's other
methods are then called as a user's code calls them. The environment gives SANDCELL_AZURE_ENDPOINT,
SANDCELL_KEY, OPENAI_BASE_URL and OPENAI_API_KEY. Prints one JSON object of what it saw
(test/python/llamaindex-azure.test.ts asserts on it)."""

import asyncio
import hashlib
import json
import os
import shutil
import sys
import tempfile

import requests
from llama_index.core.agent.workflow import ReActAgent, ToolCallResult
from llama_index.llms.openai import OpenAI
from llama_index.tools.azure_code_interpreter import AzureCodeInterpreterToolSpec

ENDPOINT = os.environ["SANDCELL_AZURE_ENDPOINT"]
seen = {}
scratch = tempfile.mkdtemp(prefix="llamaindex-azure-")
charts = os.path.join(scratch, "charts")
os.mkdir(charts)

spec = AzureCodeInterpreterToolSpec(pool_management_endpoint=ENDPOINT, local_save_path=charts)
spec.access_token_provider = lambda: os.environ["SANDCELL_KEY"]
tools = spec.to_tool_list()
seen["tools"] = [tool.metadata.name for tool in tools]
seen["session_id"] = spec.session_id


async def run_agent():
    llm = OpenAI(model="gpt-4o", api_base=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    agent = ReActAgent(tools=tools, llm=llm)
    handler = agent.run("How many units did we sell in total? Chart them too.")
    calls = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            output = event.tool_output
            calls.append({
                "tool": event.tool_name,
                "kwargs": event.tool_kwargs,
                "is_error": output.is_error,
                # What the tool returned (the service's JSON for code_interpreter) and the text the
                # agent made of it, which is its next "Observation:".
                "raw": output.raw_output if isinstance(output.raw_output, dict) else repr(output.raw_output),
                "content": output.content,
            })
    response = await handler
    return calls, str(response)


calls, answer = asyncio.run(run_agent())
seen["agent"] = {"calls": calls, "answer": answer}
pngs = sorted(name for name in os.listdir(charts) if name.endswith(".png"))
seen["charts"] = [
    {"prefix": name.startswith(spec.session_id + "_"), "magic": open(os.path.join(charts, name), "rb").read(8).hex()}
    for name in pngs
]

# The spec's own methods, in the same session the agent used.
blob = bytes(range(256)) * 4 + b"\r\n\x00end"
blob_path = os.path.join(scratch, "blob.bin")
with open(blob_path, "wb") as f:
    f.write(blob)
uploaded = spec.upload_file(local_file_path=blob_path)
seen["upload"] = [{"filename": m.filename, "size": m.size_in_bytes, "full": m.file_full_path} for m in uploaded]
seen["read_by_code"] = spec.code_interpreter(
    "import hashlib\nhashlib.sha256(open('/mnt/data/blob.bin', 'rb').read()).hexdigest()"
)["properties"]["result"]
seen["local_sha256"] = hashlib.sha256(blob).hexdigest()
seen["list"] = sorted(
    ({"filename": m.filename, "size": m.size_in_bytes, "full": m.file_full_path} for m in spec.list_files()),
    key=lambda m: m["filename"],
)

# Downloads: to a local path, and as a BytesIO; by name and by /mnt/data/ path.
saved = os.path.join(scratch, "sales-downloaded.csv")
seen["download_to_path_returns"] = repr(spec.download_file_to_local("/mnt/data/sales.csv", saved))
seen["download"] = {
    "sales_csv": open(saved, "rb").read().decode(),
    "blob_exact": spec.download_file_to_local("blob.bin").read() == blob,
    "blob_by_full_path_exact": spec.download_file_to_local("/mnt/data/blob.bin").read() == blob,
}
try:
    spec.download_file_to_local("never-written.txt")
    seen["download"]["missing"] = None
except requests.HTTPError as error:
    seen["download"]["missing"] = error.response.status_code

# Another session id is another session; a wrong token is refused.
other = AzureCodeInterpreterToolSpec(pool_management_endpoint=ENDPOINT)
other.access_token_provider = lambda: os.environ["SANDCELL_KEY"]
seen["other_session"] = {
    "files": len(other.list_files()),
    "sales": other.code_interpreter("'sales' in globals()")["properties"]["result"],
}
wrong = AzureCodeInterpreterToolSpec(pool_management_endpoint=ENDPOINT, session_id=spec.session_id)
wrong.access_token_provider = lambda: "not-a-sandcell-key"
try:
    wrong.code_interpreter("1 + 1")
    seen["wrong_key"] = None
except requests.HTTPError as error:
    seen["wrong_key"] = error.response.status_code

shutil.rmtree(scratch)
print(json.dumps(seen))
sys.exit(0)
