"""The seams of a run, declared once: every collaborator the loop calls is one of these.

    model      request dict -> response dict         model/messages.py (live), model/replay.py
    tools      .list() / .call(name, arguments)      mcp/client.py (McpStdioClient)
    gate       .propose(arguments)                   actions.ActionGate (the three write gates)
    approve    proposal -> (approved, note)          actions.prompt.tty_approve (the terminal)
    defer      proposal -> note                      serve/approvals.handoff: a pending approval
                                                     file for an operator (serve --operators)
    runner     argv -> (code, stdout, stderr)        actions.run_command (kubectl, a process group)
    verify     proposal -> Verification dict         actions/watch.py through the tools, after an
                                                     action ran (actions.wiring.verifier; serve/verify.py)
    recorder   .audit(**fields) / .trace(span)       telemetry/records.py (Recorder)
    clock      () -> seconds                         time.time / time.monotonic; tests pass their own

Tests pass fakes for any of them (a scripted model, a recording runner); nothing here runs.
`RunEnded` is the one exception a seam may raise on purpose: it ends the run with a named stop
(replay raises it when its fixture runs out); loop.run_triage turns it into the Outcome.
"""

from typing import Callable, Protocol


class RunEnded(Exception):
    """Ends the run with a named stop; a seam may raise it (replay does, when it runs out)."""

    def __init__(self, stop, error=None):
        super().__init__(error or stop)
        self.stop, self.error = stop, error


Model = Callable[[dict], dict]
Approve = Callable[[object], tuple]
Defer = Callable[[object], str]
Runner = Callable[[list], tuple]
Verify = Callable[[object], dict]
Clock = Callable[[], float]


class Tools(Protocol):
    def list(self) -> list:
        """Tool definitions (name, description, inputSchema, annotations)."""

    def call(self, name: str, arguments: dict) -> tuple:
        """(text, is_error); a failure is a value, never an exception the loop must catch."""


class Gate(Protocol):
    def propose(self, arguments: dict, *, seen=()) -> tuple:
        """(text for the model, is_error, proposal or None) for one propose_action call; `seen`:
        the target's pods the run had read unhealthy."""


class Recorder(Protocol):
    def audit(self, **fields) -> dict:
        """Append one audit entry (and show it); returns the entry as written."""

    def trace(self, span) -> None:
        """Record one finished span."""
