"""The real CLI: options, gates, scope, signals, streaming, preflight, foreign servers.

`run_cli` (test_cli.py) starts `python -m triage_agent` as a process; `run_cli_here` calls the
same entry point in the test's process (tests/support/cli_here.py), for tests of what the CLI
prints, records and returns. Each family keeps a real process end to end: the replay run and its
--json outcome and --help (test_cli.py), a live run (test_live.py), an alert on stdin
(serve/test_alerts.py), signals, closed and full streams, and the approval terminal
(test_signals.py, test_streams.py, test_gates.py, test_stream.py)."""
