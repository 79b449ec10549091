"""Command line for triage-agent (placeholder until the triage loop lands)."""

import sys


def main(argv=None):
    """Run the triage CLI; returns the process exit code."""
    print("triage-agent: the triage loop is not wired yet", file=sys.stderr)
    return 2
