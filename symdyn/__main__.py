"""``python -m symdyn``: the command line (:mod:`symdyn.cli`)."""

import sys

from .cli import main

sys.exit(main())
