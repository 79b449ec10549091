"""The write path: propose_action, its three gates, and asking the operator.

Map:
    kinds.py      the action kinds and the name patterns (all the option parser needs)
    gate.py       propose_action's tool, the Proposal record, the kubectl argv of each kind,
                  ActionGate (the three gates)
    command.py    run_command: the runner seam (a timeout that kills the process group)
    looks.py      the read tools' pod and rollout lines as values; the pods a run saw unhealthy
    watch.py      watch_action: after an executed action, recovered / not_recovered / unknown
    prompt.py     tty_approve: the approval prompt on the controlling terminal (the CLI's approve
                  seam; serve hands proposals to operators instead, serve/approvals.py)

`from triage_agent import actions` gives the gate's public names, as the one module did before.
"""

# Loaded on first use (PEP 562): the CLI's option parser needs only kinds.py before it spawns the
# MCP server, and the gate (dataclasses, the redactor) would hold that up.
_GATE = ("ACTION_KINDS", "KINDS", "MAX_OUTPUT", "MAX_REASON", "NAME_PATTERN", "NAMESPACE_PATTERN",
         "PROPOSE_ACTION_TOOL", "ActionGate", "Proposal", "build_argv", "check_proposal",
         "is_namespace_name", "model_text", "trim_output")
__all__ = [*_GATE, "run_command"]


def __getattr__(name):
    if name in _GATE:
        from triage_agent.actions import gate
        return getattr(gate, name)
    if name == "run_command":
        from triage_agent.actions.command import run_command
        return run_command
    raise AttributeError(f"module 'triage_agent.actions' has no attribute {name!r}")
