"""The write path: propose_action, its three gates, and asking the operator.

Map:
    gate.py       propose_action's tool, the Proposal record, the kubectl argv of each kind,
                  ActionGate (the three gates) and run_command (a timeout that kills the group)
    prompt.py     tty_approve: the approval prompt on the controlling terminal (the CLI's approve
                  seam; serve hands proposals to operators instead, serve/approvals.py)

`from triage_agent import actions` gives the gate's public names, as the one module did before.
"""

from triage_agent.actions.gate import (ACTION_KINDS, KINDS, MAX_OUTPUT, MAX_REASON, NAME_PATTERN,
                                       NAMESPACE_PATTERN, PROPOSE_ACTION_TOOL, ActionGate, Proposal,
                                       build_argv, check_proposal, is_namespace_name, model_text,
                                       run_command, trim_output)

__all__ = ["ACTION_KINDS", "KINDS", "MAX_OUTPUT", "MAX_REASON", "NAME_PATTERN", "NAMESPACE_PATTERN",
           "PROPOSE_ACTION_TOOL", "ActionGate", "Proposal", "build_argv", "check_proposal",
           "is_namespace_name", "model_text", "run_command", "trim_output"]
