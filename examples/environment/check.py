# Runs in the `example` environment (examples/environment/sandcell.env.json).
import os

import toolz

print(toolz.frequencies("environment")["n"], open(os.environ["EXAMPLE_GREETING"]).read().strip())
