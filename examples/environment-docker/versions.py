# Runs in any environment: which Python and IPython the image brought.
import sys

import IPython

print("Python", sys.version.split()[0], "IPython", IPython.__version__)
