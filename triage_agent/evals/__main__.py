"""`python3 -m triage_agent.evals`: every evaluation scenario through the real CLI (runner.py)."""

import sys

from triage_agent.evals.runner import main

if __name__ == "__main__":
    sys.exit(main())
