"""Entry point for `python3 -m triage_agent`."""

from triage_agent.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
