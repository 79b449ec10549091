"""The write gate as the CLI and `ask` wire it: the three gates with the terminal prompt (or
serve's pending approvals) in front and the watch after an executed action behind.

    make_gate(args, policy, recorder, stderr, tools, defer=None) -> ActionGate
        approve   prompt.tty_approve (the controlling terminal)
        defer     given by the CLI under --pending-approvals (serve's approval files: cli.py
                  wires that, as serve sits above this package)
        verify    --verify-timeout > 0: watch.watch_action through the run's own read tools
"""

from triage_agent import terminal
from triage_agent.actions import gate as gates
from triage_agent.actions import prompt
from triage_agent.actions.command import run_command


def make_gate(args, policy, recorder, stderr, tools, defer=None):
    """The three write gates for a run or a follow-up (args.allow_action: the enabled kinds)."""
    return gates.ActionGate(allowed_kinds=args.allow_action, execute=args.execute,
                            approve=prompt.tty_approve, runner=run_command,
                            namespaces=policy.namespaces, context=args.context,
                            kubeconfig=args.kubeconfig, audit_ok=recorder.audit_ok,
                            say=lambda line: print(line, file=stderr), defer=defer,
                            verify=verifier(args, tools, stderr))


def verifier(args, tools, stderr):
    """The gate's verify seam: watch an executed action through the same read-only tools
    (actions/watch.py); None with --verify-timeout 0."""
    if not getattr(args, "verify_timeout", 0):
        return None
    from triage_agent.actions import watch
    settings = watch.WatchSettings(timeout=args.verify_timeout, quiet=args.verify_quiet)

    def say(line):
        print(f"triage-agent: {terminal.printable(line, keep_newlines=False)}", file=stderr)

    def verify(proposal):
        action = {"kind": proposal.kind, "namespace": proposal.namespace,
                  "target": proposal.target, "seen": proposal.seen}
        say(f"{proposal.kind} {proposal.namespace}/{proposal.target} ran: watching it for at "
            f"most {settings.timeout:g} s (--verify-timeout)")
        found = watch.watch_action(action, tools, settings, say=say).to_dict()
        say(watch.result_line(action, found))
        return found
    return verify

