"""`python3 -m tests.bench` (make bench): every benchmark module's figures (run.py)."""

import sys

from tests.bench.run import main

if __name__ == "__main__":
    sys.exit(main())
