"""The baseline of bench/jupyter.mjs: a raw local ipykernel (no sandbox), driven by
jupyter_client over ZeroMQ, timed from sending `1+1` to the kernel's idle status.
Prints the round trips in milliseconds as JSON. Usage: raw-ipykernel.py RUNS"""
import json
import sys
import time

from jupyter_client.manager import start_new_kernel


def round_trip(client) -> float:
    started = time.perf_counter()
    request = client.execute("1+1")
    while True:
        message = client.get_iopub_msg(timeout=30)
        if (
            message["parent_header"].get("msg_id") == request
            and message["msg_type"] == "status"
            and message["content"]["execution_state"] == "idle"
        ):
            return (time.perf_counter() - started) * 1000


def main() -> None:
    runs = int(sys.argv[1])
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        for _ in range(100):
            round_trip(client)
        print(json.dumps([round_trip(client) for _ in range(runs)]))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


main()
