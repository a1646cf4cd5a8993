"""LangChain's `SessionsPythonREPLTool` (langchain-azure-dynamic-sessions) against sandcell's /azure
door, unmodified, set up as docs/azure.md shows: pool_management_endpoint is sandcell's /azure and
access_token_provider gives a sandcell key. Driven as a user's code (or an agent's tool call) does:
invoke with state kept between calls, a tool call's artifact, an error, a figure, and the file
methods. The environment gives SANDCELL_AZURE_ENDPOINT and SANDCELL_KEY. Prints one JSON object of
what it saw (test/python/langchain-azure.test.ts asserts on it)."""

import base64
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import warnings

import requests

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # the package points to its successor
    from langchain_azure_dynamic_sessions import SessionsPythonREPLTool

ENDPOINT = os.environ["SANDCELL_AZURE_ENDPOINT"]
seen = {}
scratch = tempfile.mkdtemp(prefix="langchain-azure-")
tool = SessionsPythonREPLTool(pool_management_endpoint=ENDPOINT, access_token_provider=lambda: os.environ["SANDCELL_KEY"])

# invoke: the tool's content is JSON of result, stdout and stderr; state is kept between calls.
seen["define"] = json.loads(tool.invoke(
    "```python\nimport pandas as pd\n"
    "sales = pd.DataFrame({'month': ['Jan', 'Feb', 'Mar'], 'units': [120, 150, 90]})\n"
    "print('months:', len(sales))\n```"
))
seen["use"] = json.loads(tool.invoke("print('best:', sales.loc[sales.units.idxmax(), 'month'])\nint(sales.units.sum()) * 7"))
seen["float"] = json.loads(tool.invoke("round(float(sales.units.std()) / 7, 6)"))
seen["text"] = json.loads(tool.invoke("' / '.join(sales.month)"))

# A tool call, as an agent makes it: a ToolMessage whose artifact is the service's properties.
message = tool.invoke({"args": {"python_code": "len(sales) ** 3"}, "id": "call-1", "name": tool.name, "type": "tool_call"})
seen["tool_call"] = {
    "type": type(message).__name__,
    "tool_call_id": message.tool_call_id,
    "content": json.loads(message.content),
    "artifact": message.artifact,
}

# An error, and the session still there after it.
seen["error"] = json.loads(tool.invoke("def divide(a, b):\n    return a / b\ndivide(len(sales), 0)"))
seen["after_error"] = json.loads(tool.invoke("len(sales)"))["result"]

# A figure: the content drops the base64, the artifact keeps it.
chart = tool.invoke({
    "args": {"python_code": "import matplotlib.pyplot as plt\nplt.bar(sales.month, sales.units)\nplt.show()"},
    "id": "call-2", "name": tool.name, "type": "tool_call",
})
artifact = dict(chart.artifact)
image = dict(artifact["result"])
seen["chart"] = {
    "content_result": json.loads(chart.content)["result"],
    "artifact_keys": sorted(artifact),
    "image": {"type": image["type"], "format": image["format"], "magic": base64.b64decode(image["base64_data"])[:8].hex()},
}

# Files: upload from data and from a local file, read by code, written by code, listed, downloaded.
blob = bytes(range(256)) * 3 + b"\x00\r\n\xff"
uploaded_data = tool.upload_file(data=io.BytesIO(blob), remote_file_path="blob.bin")
local_csv = os.path.join(scratch, "q2 sales.csv")
with open(local_csv, "wb") as f:
    f.write(b"month,units\nApr,75\nMay,310\nJun,42\n")
uploaded_local = tool.upload_file(local_file_path=local_csv)
seen["upload"] = [
    {"filename": m.filename, "size": m.size_in_bytes, "full_path": m.full_path} for m in (uploaded_data, uploaded_local)
]
seen["read_by_code"] = json.loads(tool.invoke(
    "import hashlib\nq2 = pd.read_csv('/mnt/data/q2 sales.csv')\n"
    "print(hashlib.sha256(open('/mnt/data/blob.bin', 'rb').read()).hexdigest())\n"
    "int(q2.units.sum() + sales.units.sum())"
))
seen["blob_sha256"] = hashlib.sha256(blob).hexdigest()
tool.invoke("pd.concat([sales, q2]).to_csv('half year.csv', index=False)")
seen["list"] = sorted(
    ({"filename": m.filename, "size": m.size_in_bytes} for m in tool.list_files()), key=lambda m: m["filename"]
)
saved = os.path.join(scratch, "downloaded.csv")
returned = tool.download_file(remote_file_path="half year.csv", local_file_path=saved)
seen["download"] = {
    "half_year": open(saved, "rb").read().decode(),
    "returned_too": returned.read() == open(saved, "rb").read(),
    "blob_exact": tool.download_file(remote_file_path="blob.bin").read() == blob,
    "q2_exact": tool.download_file(remote_file_path="q2 sales.csv").read() == open(local_csv, "rb").read(),
}
try:
    tool.download_file(remote_file_path="never-written.txt")
    seen["download"]["missing"] = None
except requests.HTTPError as error:
    seen["download"]["missing"] = error.response.status_code

# Another session id is another session; a wrong token is refused.
other = SessionsPythonREPLTool(pool_management_endpoint=ENDPOINT, access_token_provider=lambda: os.environ["SANDCELL_KEY"])
seen["other_session"] = {"files": len(other.list_files()), "sales": json.loads(other.invoke("'sales' in globals()"))["result"]}
wrong = SessionsPythonREPLTool(
    pool_management_endpoint=ENDPOINT, access_token_provider=lambda: "not-a-sandcell-key", session_id=tool.session_id
)
try:
    wrong.invoke("1 + 1")
    seen["wrong_key"] = None
except requests.HTTPError as error:
    seen["wrong_key"] = error.response.status_code

shutil.rmtree(scratch)
print(json.dumps(seen))
sys.exit(0)
