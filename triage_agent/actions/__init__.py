"""The write path: propose_action, its three gates, and asking the operator.

Map:
    gate.py       propose_action's tool, the Proposal record, the kubectl argv of each kind,
                  ActionGate (the three gates)
    command.py    run_command: the runner seam (a timeout that kills the process group)
    looks.py      the read tools' pod and rollout lines as values; the pods a run saw unhealthy
    watch.py      watch_action: after an executed action, recovered / not_recovered / unknown
    prompt.py     tty_approve: the approval prompt on the controlling terminal (the CLI's approve
                  seam; serve hands proposals to operators instead, serve/approvals.py)

`from triage_agent import actions` gives the gate's public names, as the one module did before.
"""

from triage_agent.actions.gate import (ACTION_KINDS, KINDS, MAX_OUTPUT, MAX_REASON, NAME_PATTERN,
                                       NAMESPACE_PATTERN, PROPOSE_ACTION_TOOL, ActionGate, Proposal,
                                       build_argv, check_proposal, is_namespace_name, model_text,
                                       trim_output)
from triage_agent.actions.command import run_command

__all__ = ["ACTION_KINDS", "KINDS", "MAX_OUTPUT", "MAX_REASON", "NAME_PATTERN", "NAMESPACE_PATTERN",
           "PROPOSE_ACTION_TOOL", "ActionGate", "Proposal", "build_argv", "check_proposal",
           "is_namespace_name", "model_text", "run_command", "trim_output"]
