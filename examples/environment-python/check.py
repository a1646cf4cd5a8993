from importlib.metadata import version

import termcolor

# yaspin is imported at start (warmImports); termcolor came with it, as the lock pins.
print(yaspin.__name__, version("yaspin"), termcolor.__name__, version("termcolor"))
