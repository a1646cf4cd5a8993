"""E2B's Python SDK (sync) with sandcell's volumes and named snapshots, as a user's code drives it: the
environment gives E2B_API_URL, E2B_VOLUME_API_URL (the same), E2B_SANDBOX_URL and E2B_API_KEY. Prints one
JSON object of what it saw (test/python/e2b-python-volumes.test.ts asserts on it)."""

import json

from e2b import Sandbox, Volume

seen = {}
volume = Volume.create("py-data")
seen["created"] = {"name": volume.name, "token": (volume.token or "")[:4]}
seen["listed"] = [info.name for info in Volume.list()]

writer = Sandbox.create(volume_mounts={"/mnt/data-sets": volume})
writer.commands.run("mkdir -p /mnt/data-sets/in && printf 'a,b\\n1,2\\n' > /mnt/data-sets/in/table.csv")
writer.kill()

reader = Sandbox.create(volume_mounts={"/home/user/shared": "py-data"})
seen["read_in_sandbox"] = reader.commands.run("cat /home/user/shared/in/table.csv").stdout
connected = Volume.connect(volume.volume_id)
seen["read_by_api"] = connected.read_file("/in/table.csv")
connected.write_file("/out/result.txt", "from python")
seen["written_seen"] = reader.commands.run("cat /home/user/shared/out/result.txt").stdout
seen["entries"] = sorted(entry.path for entry in connected.list("/", depth=2))
try:
    connected.read_file("/nothing.txt")
    seen["missing"] = "read"
except Exception as error:  # noqa: BLE001 - the SDK's own type is what is reported
    seen["missing"] = type(error).__name__

# A named snapshot, and a sandbox started from its name.
reader.files.write("/home/user/state.txt", "snapshotted")
snapshot = reader.create_snapshot("py-prepared")
seen["snapshot_names"] = list(snapshot.names)
started = Sandbox.create("py-prepared")
seen["from_name"] = started.files.read("/home/user/state.txt")
started.kill()
reader.kill()
seen["destroyed"] = Volume.destroy(volume.volume_id)
try:
    Volume.connect(volume.volume_id)
    seen["after_destroy"] = "found"
except Exception as error:  # noqa: BLE001
    seen["after_destroy"] = type(error).__name__
print(json.dumps(seen))
