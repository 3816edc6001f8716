"""``python -m ldp.cli``, as in 0.1 (``python -m ldp`` is the same command)."""

import sys

from ldp.cli import main

sys.exit(main())
