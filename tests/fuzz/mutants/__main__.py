"""``python -m tests.fuzz.mutants REPORT_DIR``: keep the killed mutants' reproducers."""

import sys
from pathlib import Path

from tests.fuzz.mutants import collect

for name, what in collect(Path(sys.argv[1])).items():
    print(f"{name}: {what}")
