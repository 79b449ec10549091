"""`python3 -m triage_agent.evaluate`, kept for scripts that know the old name: the same as
`python3 -m triage_agent.evals` (triage_agent/evals/runner.py)."""

import sys

from triage_agent.evals.runner import main

if __name__ == "__main__":
    sys.exit(main())
