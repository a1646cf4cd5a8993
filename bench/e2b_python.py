"""E2B's Python SDK (e2b-code-interpreter, sync Sandbox) against the server bench/e2b.mjs started:
Sandbox.create() -> first run_code('1+1') with a warm pool, and a warm run_code('1+1'), as the JS
SDK's rows measure them. Configured only by E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY; the
server's /healthz (BENCH_SERVER_URL) says when the pool is warm. Prints one JSON object of times."""

import json
import sys
import time
import urllib.request

from e2b_code_interpreter import Sandbox

server, first_samples, warm_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
failures = {"count": 0, "first": None}


def failed(error):
    failures["count"] += 1
    failures["first"] = failures["first"] or str(error)


def wait_for_warm_pool():
    for _ in range(600):
        with urllib.request.urlopen(f"{server}/healthz") as answer:
            if json.load(answer)["sessions"]["warm"] >= 2:
                return
        time.sleep(0.05)


first = []
for _ in range(first_samples):
    sandbox = None
    try:
        wait_for_warm_pool()
        started = time.perf_counter()
        sandbox = Sandbox.create()
        execution = sandbox.run_code("1+1")
        first.append((time.perf_counter() - started) * 1000)
        if execution.text != "2":
            raise RuntimeError("create -> first result: wrong result")
    except Exception as error:
        failed(error)
    if sandbox is not None:
        try:
            sandbox.kill()
        except Exception as error:
            failed(error)

warm = []
try:
    with Sandbox.create() as sandbox:
        for _ in range(100):
            sandbox.run_code("1+1")
        for _ in range(warm_runs):
            started = time.perf_counter()
            execution = sandbox.run_code("1+1")
            warm.append((time.perf_counter() - started) * 1000)
            if execution.text != "2":
                raise RuntimeError("warm run_code: wrong result")
except Exception as error:
    failed(error)

print(json.dumps({"first": first, "warm": warm, "failures": failures}))
