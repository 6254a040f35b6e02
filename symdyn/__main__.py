"""``python -m symdyn``: the command line (:mod:`symdyn.cli`).

Layer 5, the top (entry points).
"""

import sys

from .cli import main

sys.exit(main())
