"""`triage-agent ask SESSION "question"`, and what a run does with its session afterwards.

    python3 -m triage_agent ask [options] SESSION QUESTION
    python3 -m triage_agent ask --interactive [options] SESSION [QUESTION]

The session fixes what the follow-up may do: its namespaces (--namespaces may only narrow
them), its enabled action kinds, its MCP server (started again with the same scope, context
and kubeconfig). The follow-up gets fresh budgets (--max-steps 6, --max-tool-calls 10), and
--execute only when it is given to `ask` itself. Model and endpoint options default to the
session's. Audit and trace are appended (--audit-log, --trace) with the follow-up's number in
each entry; the session file is rewritten with the follow-up in it. Exit codes as for a run:
0 answered, 2 usage, 3 no answer, 4 model API or MCP failure, 128+N stopped by signal N.
"""

import argparse
import json
import sys

from triage_agent import cli, options, terminal
from triage_agent.actions import wiring
from triage_agent.options import UsageError

PROG = "triage-agent ask"


def build_parser():
    """The ask command's parser: the run's model, budget and record options, and its own."""
    p = argparse.ArgumentParser(prog=PROG, description="Ask a finished triage a follow-up "
                                "question, in its session's scope and under its gates.",
                                epilog=options.EPILOG.replace("a report was written",
                                                              "an answer was given"),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("session_file", metavar="SESSION", help="the session file of a run "
                   "(--session FILE; serve keeps OUTBOX/RUN_ID.session.json)")
    p.add_argument("question", nargs="?", help="the question, in words (at most 2000 "
                   "characters; optional with --interactive)")
    p.add_argument("--namespaces", metavar="NS[,NS...]", help="narrow the session's namespaces "
                   "to these (default: the session's; a wider scope is refused)")
    options.add_model_options(p)
    p.set_defaults(effort=None, max_tokens=None)  # the session's, unless given
    for flag in ("--model", "--effort", "--max-tokens", "--base-url", "--api-profile"):
        action = p._option_string_actions[flag]
        action.help = action.help.split(" (default")[0] + " (default: the session's)"
    options.add_budget_options(p, steps=6, tool_calls=10)
    p.add_argument("--execute", action="store_true", help="run approved actions of the "
                   "session's enabled kinds (gate 3), for this follow-up only (default: off)")
    options.add_watch_options(p)
    p.add_argument("--pending-approvals", metavar="PREFIX", help="hand proposals to serve's "
                   "operators as pending approval files (serve sets this; default: ask on the "
                   "terminal)")
    p.add_argument("--approval-ttl", type=float, default=900.0, metavar="SECONDS",
                   help="with --pending-approvals: seconds until an approval expires "
                   "(default: %(default)g)")
    options.add_record_options(p)
    options.add_interactive_option(p)
    return p


def main(argv):
    """Run `ask`; returns the exit code."""
    stderr = terminal.QuietStream(sys.stderr)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    with terminal.StopSignals() as signals:
        try:
            session = load(args)
            if args.question is None and not args.interactive:
                raise UsageError("give the question (or --interactive)")
            model, model_name = cli.make_model(args, stderr)
            code = 0
            if args.question is not None:
                code = ask_once(args, session, args.question, model, model_name, stderr,
                                signals)
            if args.interactive:
                from triage_agent.followup import interactive
                code = interactive.prompt_loop(
                    lambda question: ask_once(args, session, question, model, model_name,
                                              stderr, signals), signals, stderr, code)
            return code
        except (UsageError, KeyboardInterrupt) as exc:
            return cli.end_early(args, exc, stderr, signals)


def load(args):
    """The session, and args filled in from it (server, kinds, model settings); UsageError."""
    from triage_agent.followup import session as sessions
    try:
        session = sessions.load_session(args.session_file)
    except sessions.SessionError as exc:
        raise UsageError(str(exc)) from None
    args.session = args.session_file
    adopt(args, session)
    return session


def adopt(args, session):
    """Fill `args` from the session: what it fixes, and the model settings not given."""
    from triage_agent.followup import session as sessions
    server, stored = session["policy"]["server"], session["model"]
    for name in sessions.SERVER_FIELDS:
        setattr(args, name, server.get(name))
    args.allow_unscoped_tool = list(server.get("allow_unscoped_tool") or [])
    args.mcp_timeout = server.get("mcp_timeout") or 30.0
    args.allow_action = list(session["policy"]["allow_action"])
    args.no_preflight = True
    args.alert_identity = session.get("alert")
    for name in ("model", "base_url", "api_profile", "effort", "max_tokens"):
        if getattr(args, name, None) is None:
            setattr(args, name, stored.get(name))
    args.effort, args.max_tokens = args.effort or "medium", args.max_tokens or 16000
    if stored.get("fallbacks") is False:
        args.no_fallbacks = True
    if args.execute and not args.allow_action:
        raise UsageError("--execute: the session enables no action kind, so nothing could run")
    if args.execute and args.pending_approvals:
        raise UsageError("--pending-approvals cannot be combined with --execute")
    if args.interactive and not sys.stdin.isatty():
        raise UsageError("--interactive needs a terminal on stdin")
    options.check_endpoint(args)
    narrowed = [n.strip() for n in (args.namespaces or "").split(",") if n.strip()]
    args.narrow = tuple(dict.fromkeys(narrowed))


def ask_once(args, session, question, model, model_name, stderr, signals):
    """One follow-up, start to end: records, server, loop, session file, output; exit code."""
    from triage_agent import prompts
    from triage_agent.followup import ask
    from triage_agent.mcp.client import McpError
    from triage_agent.report import ReportSchemaError
    from triage_agent.telemetry import records
    try:
        policy = ask.followup_policy(session, namespaces=args.narrow, max_steps=args.max_steps,
                                     max_tool_calls=args.max_tool_calls,
                                     max_cost_usd=args.max_cost_usd)
        question = ask.check_question(question)
    except (ValueError, ask.AskError) as exc:
        raise UsageError(f"{'--namespaces: ' if isinstance(exc, ValueError) else ''}{exc}")
    if policy.max_cost_usd is not None and records.cost_usd(model_name, {}, args.prices) is None:
        raise UsageError(f"--max-cost-usd: no price is known for model {model_name!r} "
                         "(give --price-per-mtok or --prices-file)")
    args.symptom, args.namespaces = question, ",".join(policy.namespaces)
    signals.rearm()
    recorder = cli.open_records(args, stderr)
    client = cli.spawn_tools(args, policy.namespaces)
    try:
        try:
            tools, toolset = cli.start_tools(client, args)
        except McpError as exc:
            signals.disarm()
            recorder.finish(cli.print_failure(args, "mcp_error", f"the MCP server did not "
                                              f"start: {exc}", stderr, trace_id=recorder.trace_id))
            return 4
        except (prompts.ToolsetError, ReportSchemaError) as exc:
            raise UsageError(str(exc)) from None
        print(f"triage-agent: {cli.server_line(tools)}", file=stderr)
        outcome = run_followup(args, session, question, policy, model, model_name, tools,
                               toolset, recorder, stderr, signals)
    finally:
        client.close()
        recorder.close()
    return signals.exit_code() if outcome.stop == "interrupted" else outcome.exit_code


def run_followup(args, session, question, policy, model, model_name, tools, toolset, recorder,
                 stderr, signals):
    """The loop (followup/ask.py), then the session file, the output and the trace."""
    from triage_agent import loop
    from triage_agent.followup import ask
    settings = loop.Settings(model=model_name, max_tokens=args.max_tokens, effort=args.effort,
                             fallbacks=not args.no_fallbacks, prices=args.prices)
    try:
        outcome = ask.ask_followup(session, question, model=model, tools=tools,
                                   toolset=toolset, policy=policy, settings=settings,
                                   gate=wiring.make_gate(args, policy, recorder, stderr, tools,
                                                         defer=cli.hand_over(args)),
                                   recorder=recorder,
                                   progress=lambda line: print(line, file=stderr))
    finally:
        signals.disarm()
        tools.close()
    outcome.trace, outcome.audit_log = args.trace, args.audit_log
    outcome.audit_error = recorder.audit_error
    outcome.alert = getattr(args, "alert_identity", None)
    if args.record:
        cli.save_recording(args, model, model_name, stderr)
    save(args.session, session, stderr)
    print_answer(outcome, args, stderr)
    recorder.finish(outcome)
    return outcome


def save(path, session, stderr):
    """Write the session file; a failure is said, never fatal (the answer is printed)."""
    from triage_agent.followup import session as sessions
    if not path:
        return
    try:
        sessions.write_session(path, session)
    except (OSError, ValueError) as exc:
        print(f"triage-agent: could not write the session {path}: "
              f"{getattr(exc, 'strerror', None) or exc}", file=stderr)


def print_answer(outcome, args, stderr):
    """The answer (and a revised report) on stdout, or the outcome as JSON; the rest on
    stderr as for a run."""
    from triage_agent.followup import render
    if args.json:
        args.outcome_printed = True
        terminal.print_stdout(json.dumps(outcome.to_dict(), indent=1, default=str))
    elif outcome.answer is not None:
        terminal.print_stdout(render.answer_text(outcome, context=args.context,
                                                 kubeconfig=args.kubeconfig))
    cli.print_notes(outcome, args, stderr)


def after_run(args, policy, model, model_name, outcome, transcript, stderr, signals, code):
    """A run ended: keep its session (--session) and ask at the prompt (--interactive)."""
    from triage_agent.followup import session as sessions
    session = sessions.new_session(args, policy=policy, model_name=model_name,
                                   outcome=outcome, transcript=transcript)
    save(args.session, session, stderr)
    if not args.interactive:
        return code
    from triage_agent.followup import interactive
    args.narrow, args.max_steps, args.max_tool_calls = (), 6, 10
    args.no_preflight = True
    return interactive.prompt_loop(
        lambda question: ask_once(args, session, question, model, model_name, stderr,
                                  signals), signals, stderr, code)
