"""``python -m ldp``: the ``ldp`` command (for environments where the console script is not on PATH)."""

import sys

from ldp.cli import main

sys.exit(main())
