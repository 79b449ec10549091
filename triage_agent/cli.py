"""Command line: parse options, wire the seams (model, MCP tools, gate, recorder), show the outcome.

    python3 -m triage_agent "SYMPTOM" --namespaces NS[,NS...] [options]
    python3 -m triage_agent --alert FILE|- --namespaces NS[,NS...] [options]
    python3 -m triage_agent serve --listen HOST:PORT --namespaces NS[,NS...] [options] (serve.py)

Before the first model call the cluster is checked through this project's server (preflight.py;
skipped for another server or with --no-preflight): a failure ends the run with its cause and
what to do.

Exit codes: 0 report written, 2 usage or configuration error (a failed preflight too), 3 run
ended without a report, 4 model API or MCP server failure, 128 + N when signal N stopped the
run: 130 for ^C (SIGINT), 143 for SIGTERM, 129 for SIGHUP (the terminal went away). All three
stop a run the same way (terminal.py): stop "interrupted", the MCP server is shut down, and the
exit code says which signal it was, as a shell reports a process killed by it. Once start-up is
done every exit still prints the outcome, audit and cost gathered so far.

The run's audit and trace records are opened here (records.py); when the run ends, however it
ends, its trace is written and sent to the collector the OTEL_* environment names (otlp.py),
after the outcome is printed; an export failure is one warning line, never another exit code.

With --json the outcome is one JSON object on stdout and everything meant for people goes to
stderr; a failure before the run (once the options parse) is an outcome too, with stop
usage_error, preflight_failed, mcp_error or interrupted and no steps. A stderr that is closed,
full or gone loses the lines meant for people and the run goes on; a stdout whose reader went
away (`| head -1`) ends the output quietly, and the exit code is still the outcome's.
"""

import json
import os
import sys

from triage_agent import terminal
from triage_agent.options import (DEFAULT_MODEL, OWN_SERVER_UNSCOPED, PROJECT_ROOT,
                                  UsageError, build_parser, check_options, server_argv)


def make_model(args, stderr):
    """(model seam, model name). Live: the streaming client (unless --no-stream) behind the
    status line, which also shows the client's waits to retry."""
    from triage_agent.model import replay
    if args.replay:
        try:
            fixture = replay.load_fixture(args.replay)
        except replay.FixtureError as exc:
            raise UsageError(str(exc)) from None
        return replay.ReplayModel(fixture), args.model or fixture.get("model") or DEFAULT_MODEL
    from triage_agent import status
    from triage_agent.model import providers
    from triage_agent.model.messages import MessagesClient
    try:  # the endpoint's credentials are found (never shown) before the first model call
        transport, lines = providers.build(args)
    except providers.ProviderError as exc:
        raise UsageError(str(exc)) from None
    for said in lines:
        print(f"triage-agent: {said}", file=stderr)
    line = status.StatusLine(stderr, max_steps=args.max_steps, tty=status.is_terminal(stderr),
                             show_thinking=args.show_thinking)
    client = MessagesClient(transport=transport, stream=not args.no_stream,
                            idle_timeout=args.idle_timeout,
                            first_byte_timeout=args.first_byte_timeout, on_stream=line.event,
                            on_retry=lambda n, delay, error: line.retry(
                                f"[retry {n}] {error}; trying again in {delay:.1f} s"))
    model = status.StatusModel(client, line)
    model = replay.RecordingModel(model) if args.record else model
    return model, args.model or DEFAULT_MODEL


def unscoped_tools(args):
    """Server tools offered without a namespace argument: those the operator names, and our own
    server's cluster-scoped ones when the CLI starts that server (never on a server's say-so)."""
    return set(args.allow_unscoped_tool) | (set() if args.mcp else set(OWN_SERVER_UNSCOPED))


def spawn_tools(args, namespaces):
    """The MCP client, its server process already booting (it starts while the CLI sets up its
    model and records; its era is settled in start_tools). A server that cannot even be spawned
    is reported by start_tools, like one that fails its handshake."""
    from triage_agent.mcp.client import McpError, McpStdioClient
    env = {}
    if not args.mcp:  # our own server must import from this checkout even when run elsewhere
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                          os.environ.get("PYTHONPATH")]))
    client = McpStdioClient(server_argv(args, namespaces), env=env,
                            call_timeout=args.mcp_timeout)
    try:
        client.spawn()
    except McpError:
        pass
    return client


def start_tools(client, args):
    """Settle the MCP server's era and build the toolset; McpError / ToolsetError on failure."""
    from triage_agent import prompts
    try:
        client.start()
        server_tools = client.list()
        listed = {t.get("name") for t in server_tools if isinstance(t, dict)}
        missing = [name for name in args.allow_unscoped_tool if name not in listed]
        if missing:
            raise UsageError(f"--allow-unscoped-tool: the MCP server has no tool named "
                             f"{', '.join(map(repr, missing))}")
        toolset = prompts.build_toolset(server_tools, unscoped=unscoped_tools(args))
    except BaseException:
        client.close()
        raise
    return client, toolset


def print_failure(args, stop, error, stderr, trace_id=None, *, advice=None):
    """A run that never started: the error (and what to do) on stderr and, with --json, its
    outcome on stdout. Returns that outcome."""
    from triage_agent.outcome import Outcome
    print(f"triage-agent: {error}", file=stderr)
    if advice:
        print(f"triage-agent: what to do: {advice}", file=stderr)
        error = f"{error} (what to do: {advice})"
    outcome = Outcome(stop=stop, error=error, model=args.model or DEFAULT_MODEL,
                      trace_id=trace_id, alert=getattr(args, "alert_identity", None))
    if args.json and not getattr(args, "outcome_printed", False):
        terminal.print_stdout(json.dumps(outcome.to_dict(), indent=1))
    return outcome


def end_early(args, exc, stderr, signals, recorder=None):
    """A usage error or a stop signal before the run got going: say so (and, once there is a
    recorder, end its trace); returns the exit code."""
    signals.disarm()
    stop, code = ("usage_error", 2) if isinstance(exc, UsageError) else \
        ("interrupted", signals.exit_code())
    error = str(exc) if isinstance(exc, UsageError) else terminal.reason(exc)
    outcome = print_failure(args, stop, error, stderr,
                            trace_id=recorder.trace_id if recorder else None)
    if recorder is not None:
        recorder.finish(outcome)
    return code


def print_outcome(outcome, args, stderr):
    """Report (or JSON) on stdout; stop, error and cost on stderr."""
    from triage_agent import report
    args.outcome_printed = True
    if args.json:
        terminal.print_stdout(json.dumps(outcome.to_dict(), indent=1, default=str))
    taken = report.actions_taken(outcome.proposals)
    if not args.json and outcome.report is not None:
        from triage_agent.verify import show
        text = report.render_text(outcome.report, grounding_warnings=outcome.grounding_warnings,
                                  context=args.context, kubeconfig=args.kubeconfig,
                                  actions=taken, checked=show.checked(
                                      outcome.verification, outcome.report.get("confidence")))
        if outcome.alert:
            from triage_agent.serve import alerts
            text = alerts.render_identity(outcome.alert) + "\n\n" + text
        terminal.print_stdout(text)
    elif not args.json and any(taken.values()):  # no report: what ran must still be said
        print("triage-agent: actions taken in this run:\n"
              + "\n".join(report.render_actions_taken(taken)), file=stderr)
    print_notes(outcome, args, stderr)


def print_notes(outcome, args, stderr):
    """The stderr lines after a run or a follow-up: stop, errors, violations, cost."""
    from triage_agent.telemetry import records
    if outcome.stop not in ("report", "answer"):
        ended = "run ended without a report" if outcome.followup is None else \
            f"follow-up {outcome.followup} ended without an answer"
        print(f"triage-agent: {ended} (stop: {outcome.stop})", file=stderr)
    if outcome.error:
        print(f"triage-agent: {outcome.error}", file=stderr)
    if outcome.audit_error:
        print(f"triage-agent: {outcome.audit_error}; no action could execute after that",
              file=stderr)
    for violation in outcome.violations:  # the tool name is the model's: an unknown one too
        tool = terminal.printable(violation["tool"], keep_newlines=False)
        print(f"triage-agent: violation at step {violation['step']}: {violation['decision']} "
              f"{tool}", file=stderr)
    usage = records.Usage(**outcome.usage, cost=outcome.cost_usd)
    line = records.cost_line(outcome.model, usage, getattr(args, "prices", None),
                             provider=provider_name(args))
    if outcome.followup is not None:
        line = f"follow-up {outcome.followup}: {line}"
    if outcome.context:
        from triage_agent import context
        line += " · " + context.cost_tail(outcome.context)
    print(terminal.printable(line, keep_newlines=False), file=stderr)


def provider_name(args):
    """gen_ai.provider.name of the run's model endpoint (anthropic, aws.bedrock, gcp.vertex_ai)."""
    from triage_agent.model.providers import SEMCONV_NAMES
    return SEMCONV_NAMES.get(getattr(args, "provider", None) or "anthropic", "anthropic")


def run(args, stderr, signals):
    """Everything after argument parsing; returns the exit code."""
    namespaces = check_options(args)
    if args.alert is not None:
        namespaces = take_alert(args, namespaces, stderr)
        if namespaces is None:
            return 0
    recorder = open_records(args, stderr)  # the audit log fails closed: before anything starts
    try:
        client = spawn_tools(args, namespaces)  # it boots while the rest of the CLI loads
    except BaseException:
        recorder.close()
        raise
    try:
        # imported here, not at the top, so that --help and usage errors start fast
        from triage_agent import loop
        from triage_agent.telemetry import records
        policy = loop.rules.Policy(namespaces=namespaces, max_steps=args.max_steps,
                                   max_tool_calls=args.max_tool_calls,
                                   max_repeats=args.max_repeats, max_cost_usd=args.max_cost_usd,
                                   max_result_bytes=args.max_result_bytes,
                                   context_budget_tokens=args.context_budget_tokens)
        model, model_name = make_model(args, stderr)
        if policy.max_cost_usd is not None and records.cost_usd(model_name, {},
                                                                args.prices) is None:
            raise UsageError(f"--max-cost-usd: no price is known for model {model_name!r} "
                             "(give --price-per-mtok or --prices-file)")
        return triage(args, policy, model, model_name, client, recorder, stderr, signals)
    except (UsageError, KeyboardInterrupt) as exc:
        return end_early(args, exc, stderr, signals, recorder)
    finally:
        client.close()  # triage closed it already when it ran; this covers what ended it early
        recorder.close()


def open_records(args, stderr):
    """The run's Recorder: audit and trace files, and the OTLP export the environment asks for
    (a bad OTEL_* value is a warning, never a reason not to run)."""
    from triage_agent.telemetry import otel, otlp, records
    settings = otlp.settings_from_env(os.environ)
    say = lambda line: print(f"triage-agent: {line}", file=stderr)  # noqa: E731
    for problem in settings.problems:
        say(f"warning: {problem}")
    try:
        return records.Recorder(audit_path=args.audit_log, trace_path=args.trace, stderr=stderr,
                                tracer=otel.Tracer(capture_content=settings.capture_content),
                                exporter=otlp.exporter(settings, say))
    except OSError as exc:  # the audit log fails closed: a run it cannot record does not start
        raise UsageError(f"--audit-log: cannot open {args.audit_log!r} ({exc.strerror or exc}); "
                         "a run whose audit cannot be written does not start") from None


def take_alert(args, ceiling, stderr):
    """--alert: the symptom from the alert, the namespaces it names inside the ceiling; None when
    nothing fires (said in one line, and with --json as an outcome)."""
    from triage_agent.serve import alerts
    try:
        firing = alerts.parse_payload(alerts.read_payload(args.alert))
    except alerts.AlertError as exc:
        raise UsageError(f"--alert: {exc}") from None
    if not firing:
        args.alert_identity = {"alerts": []}
        print_failure(args, "not_firing", "no firing alert in the payload: nothing to triage",
                      stderr)
        return None
    args.alert_identity = alerts.identity(firing)
    try:
        namespaces = alerts.scope(firing, ceiling)
    except alerts.ScopeError as exc:
        raise UsageError(f"--alert: {exc}") from None
    args.symptom = alerts.symptom(firing)
    return namespaces


def triage(args, policy, model, model_name, client, recorder, stderr, signals):
    """Start the tools, run the loop, shut the server down, print the outcome."""
    from triage_agent import prompts
    from triage_agent.mcp.client import McpError
    from triage_agent.report import ReportSchemaError
    try:
        tools, toolset = start_tools(client, args)
    except McpError as exc:
        signals.disarm()
        recorder.finish(print_failure(args, "mcp_error", f"the MCP server did not start: {exc}",
                                      stderr, trace_id=recorder.trace_id))
        return 4
    except (prompts.ToolsetError, ReportSchemaError) as exc:
        raise UsageError(str(exc)) from None
    print(f"triage-agent: {server_line(tools)}", file=stderr)
    recorder.tracer.mcp_attributes = {"mcp.protocol.version": tools.protocol_version}
    recorder.tracer.provider = recorder.provider = provider_name(args)
    transcript = {}
    try:
        failed = preflight(args, policy, tools, stderr, recorder)
        if not failed:
            outcome = investigate(args, policy, model, model_name, tools, toolset, recorder,
                                  stderr, transcript=transcript)
    finally:
        signals.disarm()  # the run is over: no signal may cut the server's shutdown or the output
        tools.close()
    if failed:
        return failed
    outcome.trace, outcome.audit_log = args.trace, args.audit_log
    outcome.trace_id = recorder.trace_id
    outcome.audit_error = recorder.audit_error
    outcome.alert = getattr(args, "alert_identity", None)
    if args.record:
        save_recording(args, model, model_name, stderr)
    print_outcome(outcome, args, stderr)
    recorder.finish(outcome)  # after the output: a slow collector must not hold the report back
    code = signals.exit_code() if outcome.stop == "interrupted" else outcome.exit_code
    if args.session or args.interactive:
        from triage_agent.followup import command
        return command.after_run(args, policy, model, model_name, outcome, transcript,
                                 stderr, signals, code)
    return code


def preflight(args, policy, tools, stderr, recorder=None):
    """The cluster checks before the first model call (preflight.py); the exit code when they
    failed (reported, and the trace ended with that outcome), else None."""
    from triage_agent import preflight as checks

    def fail(stop, error, advice):
        outcome = print_failure(args, stop, error, stderr, advice=advice,
                                trace_id=recorder.trace_id if recorder else None)
        if recorder:
            recorder.finish(outcome)
    return checks.before_run(tools, policy.namespaces, skip=args.no_preflight, fail=fail,
                             say=lambda line: print(f"triage-agent: {line}", file=stderr),
                             audit=recorder.audit if recorder else None)


def server_line(client):
    """Which server answered and in which MCP era, for the operator's first look."""
    info = client.server_info or {}
    name = terminal.shorten(terminal.printable(
        f"{info.get('name', '?')} {info.get('version', '')}".strip(), keep_newlines=False), 80)
    era = "stateless" if client.era == "modern" else "initialize handshake"
    return f"MCP server {name}, protocol {client.protocol_version} ({era})"


def investigate(args, policy, model, model_name, tools, toolset, recorder, stderr, **loop_extra):
    """Wire the gate and the settings and run the loop (`loop_extra`: a follow-up's resume and
    ending, a transcript to fill); returns its Outcome."""
    from triage_agent import loop
    reasons = {}
    for left_out in toolset.not_offered:
        reasons.setdefault(left_out["reason"], []).append(left_out["tool"])
    for reason, names in reasons.items():
        print(f"triage-agent: not offered to the model ({reason}): "
              + terminal.printable(", ".join(names), keep_newlines=False), file=stderr)
    from triage_agent.actions import wiring   # here: the gate is not needed before the server is spawned
    gate = wiring.make_gate(args, policy, recorder, stderr, tools, defer=hand_over(args))
    settings = loop.Settings(model=model_name, max_tokens=args.max_tokens, effort=args.effort,
                             fallbacks=not args.no_fallbacks, prices=args.prices)
    return loop.run_triage(args.symptom, model=model, tools=tools, policy=policy,
                           settings=settings, toolset=toolset, gate=gate, recorder=recorder,
                           progress=lambda line: print(line, file=stderr),
                           review=args.verify or not (args.replay or args.no_verify), **loop_extra)


def hand_over(args):
    """--pending-approvals (set by serve): the gate's defer seam, which writes each proposal as
    a pending approval for an operator instead of asking on a terminal; else None."""
    if not args.pending_approvals:
        return None
    from triage_agent.serve import approvals
    return approvals.handoff(args.pending_approvals, alert=getattr(args, "alert_identity", None),
                             ttl=args.approval_ttl)


def save_recording(args, model, model_name, stderr):
    """Write --record's fixture; a failure is reported, not fatal."""
    from triage_agent.model import replay
    fixture = model.fixture(description=f"recorded live run: {args.symptom[:200]} "
                            f"(namespaces {args.namespaces})", model=model_name)
    try:
        replay.write_fixture(args.record, fixture)
    except OSError as exc:
        print(f"triage-agent: could not write --record file: {exc}", file=stderr)


def main(argv=None):
    """Run the triage CLI (or `serve`); returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from triage_agent.serve import service as serve
        return serve.main(argv[1:])
    if argv[:1] == ["ask"]:
        from triage_agent.followup import command
        return command.main(argv[1:])
    stderr = terminal.QuietStream(sys.stderr)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    with terminal.StopSignals() as signals:
        try:
            return run(args, stderr, signals)
        except (UsageError, KeyboardInterrupt) as exc:  # once running, the loop handles ^C
            return end_early(args, exc, stderr, signals)
