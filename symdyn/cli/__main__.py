"""``python -m symdyn.cli``: the command line.

Layer 5, the top (entry points).
"""

import sys

from . import main

sys.exit(main())
