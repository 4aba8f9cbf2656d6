"""``python -m rbdiff``: the command line (see rbdiff.cli)."""

import sys

from rbdiff.cli import main

sys.exit(main())
