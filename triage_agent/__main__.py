"""Entry point for `python3 -m triage_agent`.

When main() returns, every record is closed and the outcome is written: the process flushes
stdout and stderr and leaves with os._exit, skipping interpreter teardown, which the caller
(a shell, CI, the evaluator) otherwise waits for at the end of every run (about 40 ms).
"""

import os
import sys

from triage_agent.cli import main

if __name__ == "__main__":
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None when the fd was closed before Python started
                stream.flush()
        except (OSError, ValueError):  # a reader that went away, or a stream already closed
            pass
    os._exit(code or 0)
