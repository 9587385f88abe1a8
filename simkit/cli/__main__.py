"""``python -m simkit.cli``: the command without its installed script (the tests and
the source-mutant runner start it this way)."""

import sys

from simkit.cli import main

sys.exit(main())
