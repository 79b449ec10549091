"""`triage-agent serve`: the webhook service that Alertmanager calls, one triage per alert.

    python3 -m triage_agent serve --listen HOST:PORT --namespaces CEILING [--workers N]
        [--queue N] [--outbox DIR] [--forward URL] [--token-file FILE] [--dedup-seconds S]
        [--drain-seconds S] [--operators FILE [--approval-ttl S] [--execute] [--public-url URL]
        [--max-followups N]]
        [run options: --model, --max-steps, --mcp, --replay, --allow-action KIND, ...]

Options serve does not know are run options, checked once at start with the CLI's own parser and
passed to every run. Each run is a triage CLI child process (runs.cli_runner) with its own
MCP server, budgets, audit and trace, and no terminal: approval fails closed, so proposals are
listed and nothing is executed. With --operators FILE a proposal of an enabled kind becomes a
pending approval that an operator decides through the API or the pages (approvals.py); with
--execute as well serve runs approved ones, once (refused without --operators). Every run keeps
its session (OUTBOX/RUN_ID.session.json); with --operators an operator may ask it follow-up
questions through the API or the run page (followups.py), run on the same workers. SIGTERM (or ^C)
stops accepting,
lets running triages finish up to --drain-seconds, interrupts the rest, writes queued alerts out
as not run, sends what is left to forward, and exits 0.
"""

import argparse
import ipaddress
import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from triage_agent.chat import slack as slack_mod
from triage_agent.serve import approvals, endpoints, followups, outcomes, runs, sessions, verify

# run options that serve owns itself, or that make no sense without a person at a terminal
NOT_FOR_SERVE = ("--json", "--alert", "--audit-log", "--trace", "--record", "--namespaces",
                 "--pending-approvals", "--session", "--interactive")


SWEEP_SECONDS = 15.0


class ServeUsageError(Exception):
    """Bad serve options: exit 2 with this message."""


def build_parser():
    p = argparse.ArgumentParser(prog="triage-agent serve", description="Triage Alertmanager "
                                "alerts: a webhook service that runs one triage per alert.",
                                epilog="Any other option is a run option (see triage-agent "
                                "--help) passed to every run.")
    p.add_argument("--listen", default="127.0.0.1:9095", metavar="HOST:PORT",
                   help="address to listen on (default 127.0.0.1:9095; port 0 picks one)")
    p.add_argument("--namespaces", required=True, metavar="NS[,NS...]",
                   help="the ceiling: alerts naming other namespaces are refused")
    p.add_argument("--workers", type=int, default=2, help="triages at once (default 2)")
    p.add_argument("--queue", type=int, default=100, help="alerts waiting at most (default 100)")
    p.add_argument("--outbox", default="triage-outbox", help="directory for outcome files "
                   "(default ./triage-outbox)")
    p.add_argument("--forward", metavar="URL", help="POST each outcome file here (retried)")
    p.add_argument("--token-file", metavar="FILE", help="bearer token the webhook requires "
                   "(required when listening beyond loopback)")
    p.add_argument("--dedup-seconds", type=float, default=3600.0, help="an alert triaged this "
                   "recently starts no new run (default 3600)")
    p.add_argument("--drain-seconds", type=float, default=60.0, help="on SIGTERM, how long "
                   "running triages may finish before they are interrupted (default 60)")
    p.add_argument("--operators", metavar="FILE", help="turn approvals on: one operator a "
                   "line, NAME SHA256HEX of that operator's token (default: off, proposals "
                   "fail closed)")
    p.add_argument("--approval-ttl", type=float, default=approvals.DEFAULT_TTL,
                   metavar="SECONDS", help="how long an approval waits before it expires "
                   "(default 900)")
    p.add_argument("--execute", action="store_true", help="run approved actions, once each "
                   "(needs --operators; default: approval records the command to run by hand)")
    p.add_argument("--public-url", metavar="URL", help="base of each approval_url (default: "
                   "the address serve listens on)")
    p.add_argument("--max-followups", type=int, default=followups.DEFAULT_MAX_FOLLOWUPS,
                   metavar="N", help="follow-up questions an operator may ask of one run "
                   "(needs --operators; default %(default)s)")
    slack_mod.add_flags(p)
    return p


def parse(argv):
    """(serve options, run options); ServeUsageError for what cannot work."""
    from triage_agent import options as cli_options
    args, run_args = build_parser().parse_known_args(argv)
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ServeUsageError(f"--listen: {args.listen!r} is not HOST:PORT")
    args.host, args.port = host.strip("[]"), int(port)
    if args.workers < 1 or args.queue < 1 or args.drain_seconds < 0 or args.dedup_seconds < 0:
        raise ServeUsageError("--workers and --queue must be at least 1; seconds not negative")
    if args.max_followups < 0:
        raise ServeUsageError("--max-followups must be 0 or more")
    bad = [a for a in run_args if a.split("=")[0] in NOT_FOR_SERVE]
    if bad:
        raise ServeUsageError(f"not a run option for serve: {bad[0]} (serve writes each run's "
                              "JSON, audit and trace to the outbox and never executes)")
    try:
        checked = cli_options.build_parser().parse_args(["--alert", "-", "--namespaces",
                                                         args.namespaces, *run_args])
        if checked.symptom is not None:
            raise ServeUsageError(f"not a run option for serve: {checked.symptom!r} (each run's "
                                  "symptom comes from its alert)")
        args.ceiling = cli_options.check_options(checked)
    except SystemExit:
        raise ServeUsageError("the run options above are not valid") from None
    except cli_options.UsageError as exc:
        raise ServeUsageError(str(exc)) from None
    for flag in ("kubeconfig", "prometheus_token_file", "prometheus_ca"):
        if getattr(checked, flag, None):  # check_options made it absolute: every run must find it
            run_args = _with_value(run_args, "--" + flag.replace("_", "-"), getattr(checked, flag))
    args.token = _token(args)
    args.run = checked
    args.operator_list = _operators(args, checked)
    try:
        args.slack = slack_mod.load(args)
    except slack_mod.SlackConfigError as exc:
        raise ServeUsageError(str(exc)) from None
    return args, run_args


def _operators(args, checked):
    """The Operators of --operators (None without it), after the checks approvals need."""
    if args.execute and not args.operators:
        raise ServeUsageError("--execute needs --operators FILE: without named operators no "
                              "approval can be given, so nothing may run")
    if not args.operators:
        return None
    if args.execute and not checked.allow_action:
        raise ServeUsageError("--execute without --allow-action can never run anything: "
                              "enable the action kinds it may run with --allow-action KIND")
    if not args.approval_ttl > 0:
        raise ServeUsageError("--approval-ttl must be more than 0 seconds")
    if args.public_url and not args.public_url.startswith(("http://", "https://")):
        raise ServeUsageError(f"--public-url {args.public_url!r}: give an http(s) URL")
    try:
        operators = sessions.Operators.load(args.operators)
    except sessions.OperatorsError as exc:
        raise ServeUsageError(f"--operators: {exc}") from None
    if args.token and operators.name_for(args.token):
        raise ServeUsageError("--operators: the webhook token is also an operator's token; "
                              "the webhook token must never approve")
    return operators


def _with_value(run_args, flag, value):
    out, skip = [], False
    for arg in run_args:
        if skip:
            skip = False
            continue
        if arg == flag:
            skip = True
            continue
        if not arg.startswith(flag + "="):
            out.append(arg)
    return out + [flag, value]


def _token(args):
    if args.token_file is None:
        if not _loopback(args.host):
            raise ServeUsageError(f"--listen {args.listen} is reachable beyond this machine: "
                                  "give --token-file (Alertmanager sends it as a bearer token)")
        return None
    try:
        token = Path(args.token_file).read_text().strip()
    except OSError as exc:
        raise ServeUsageError(f"--token-file: {exc.strerror or exc}") from None
    if not token or any(c.isspace() for c in token):
        raise ServeUsageError("--token-file: the token must be one word, not empty")
    return token


def _loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Forwarder:
    """POSTs outcome files to a ticketing webhook from its own thread, retrying with backoff; a
    target that keeps failing is recorded in OUTBOX/forward-failures.jsonl, never blocks runs."""

    def __init__(self, url, engine, *, attempts=5, delay=0.5, timeout=10.0):
        self.url, self.engine = url, engine
        self.attempts, self.delay, self.timeout = attempts, delay, timeout
        self._pending, self._lock = [], threading.Condition()
        self._busy = self._closing = False
        self._stop = threading.Event()  # set when close() gives up waiting: no more backoff
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def submit(self, doc):
        with self._lock:
            self._pending.append(doc)
            self._lock.notify_all()

    def _work(self):
        while True:
            with self._lock:
                while not self._pending and not self._closing:
                    self._lock.wait()
                if not self._pending:
                    return
                doc, self._busy = self._pending.pop(0), True
            try:
                self._send(doc)
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _send(self, doc):
        body, error = json.dumps(doc).encode(), None
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(self.url, data=body, method="POST", headers={
                "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout):
                    return
            except urllib.error.HTTPError as exc:
                error = f"HTTP {exc.code} {exc.reason}"
            except (urllib.error.URLError, OSError, ValueError) as exc:
                error = str(getattr(exc, "reason", exc))
            if attempt < self.attempts and self._stop.wait(self.delay * 2 ** (attempt - 1)):
                error += " (the service stopped before the next try)"
                break
        self._record_failure(doc, attempt, error)

    def _record_failure(self, doc, attempts, error):
        with self.engine._lock:
            self.engine.stats.forward_failures += 1
        line = {"run_id": doc["run_id"], "url": self.url, "attempts": attempts, "error": error,
                "at": runs.now_iso()}
        with open(self.engine.outbox / "forward-failures.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\n")
        print(f"triage-agent serve: could not forward {doc['run_id']} after {attempts} "
              f"tries: {error}", file=sys.stderr, flush=True)

    def close(self, grace=30.0):
        """Let pending forwards (and their retries) finish for up to `grace` seconds; after that
        each gets one more try without waiting, and failures are recorded."""
        end = time.monotonic() + grace
        with self._lock:
            self._closing = True
            self._lock.notify_all()
            while (self._pending or self._busy) and time.monotonic() < end:
                self._lock.wait(end - time.monotonic())
        self._stop.set()
        self._thread.join()


def approval_store(args, engine, stop=None):
    """The approvals Store of this serve, and the engine writing outcomes through an
    OutcomeWriter that merges approvals in (and rewrites them when one changes)."""
    writer = outcomes.OutcomeWriter(engine.outbox, write=runs.write_atomically,
                                    forward=lambda doc: engine.on_outcome(doc))
    check = approvals.command_check(kinds=tuple(args.run.allow_action), ceiling=args.ceiling,
                                    context=args.run.context, kubeconfig=args.run.kubeconfig)
    writer.store = approvals.Store(engine.outbox, execute=args.execute, rebuild=check,
                                   changed=writer.changed,
                                   verify=verify.watcher(args.run, _say, stop) if args.execute
                                   else None)
    engine.write_outcome = writer.finish
    return writer.store, writer


def _say(line):
    print(f"triage-agent serve: {line}", file=sys.stderr, flush=True)


def sweep(store, stop, every=SWEEP_SECONDS):
    """Look at every approval each `every` seconds until stop: those whose time is up expire."""
    while not stop.wait(every):
        try:
            store.list()
        except Exception as exc:  # a sweep that fails is tried again; it never stops serve
            print(f"triage-agent serve: approvals sweep failed: {exc}", file=sys.stderr,
                  flush=True)


def start_slack(args, engine, service, store):
    """Slack's side, hooked to the engine (runs start and end), the store (approvals change),
    the follow-ups (asked from a thread, answered there) and the webhook (resolved alerts);
    its Socket Mode connection started."""
    slack = slack_mod.Slack(args.slack, outbox=engine.outbox, store=store,
                            operators=args.operator_list, base_url=service.base_url)
    bridge = slack.bridge
    engine.on_start = lambda job: bridge.run_started(job.run_id, job.alert)
    engine.on_outcome = slack_mod.also(engine.on_outcome, bridge.outcome)
    if store is not None:
        store.changed = slack_mod.also(store.changed, bridge.approval_changed)
    service.on_resolved = bridge.resolved
    service.slack = slack
    if service.questions is not None:  # a mention in a thread is a follow-up; its answer posts
        bridge.questions = service.questions
        service.questions.ended = bridge.question_done
    return slack.start()


def main(argv):
    """Run the service until SIGTERM/SIGINT; returns the exit code."""
    try:
        args, run_args = parse(argv)
    except ServeUsageError as exc:
        print(f"triage-agent serve: {exc}", file=sys.stderr)
        return 2
    outbox = Path(args.outbox).resolve()
    on = args.operator_list is not None
    runner = runs.cli_runner(ceiling=args.ceiling, run_args=run_args, outbox=outbox,
                             approval_ttl=args.approval_ttl if on else None,
                             env=slack_mod.child_env() if args.slack else None)
    engine = runs.Engine(runner=runner, outbox=outbox, workers=args.workers,
                         queue_size=args.queue, dedup_seconds=args.dedup_seconds)
    forwarder = Forwarder(args.forward, engine) if args.forward else None
    if forwarder:
        engine.on_outcome = forwarder.submit
    stop = threading.Event()  # set by SIGTERM/SIGINT; also ends the watches after approvals
    store, writer = approval_store(args, engine, stop) if on else (None, None)
    questions = followups.Questions(outbox, engine=engine, runner=followups.ask_runner(
        outbox=outbox, run_args=run_args, approval_ttl=args.approval_ttl,
        env=slack_mod.child_env() if args.slack else None),
        max_followups=args.max_followups, revised=writer.revised,
        answered=followups.attach_answer(store, outbox)) if on else None
    service = endpoints.Service(engine, ceiling=args.ceiling, token=args.token,
                                approvals=store, operators=args.operator_list,
                                questions=questions)
    try:
        server = endpoints.make_server(service, args.host, args.port)
    except OSError as exc:
        print(f"triage-agent serve: cannot listen on {args.listen}: {exc}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    service.base_url = (args.public_url or f"http://{host}:{port}").rstrip("/")
    slack = start_slack(args, engine, service, store) if args.slack else None
    if store is not None:
        writer.base_url = service.base_url
        for record in store.recover():
            print(f"triage-agent serve: approval {record['id']} was executing when serve "
                  "stopped: now unknown (check the cluster)", file=sys.stderr, flush=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    engine.start()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    if store is not None:  # an approval nobody looks at still expires, and its ticket hears it
        threading.Thread(target=sweep, args=(store, stop), daemon=True).start()
    approvals_said = (f", approvals by {len(args.operator_list.names)} operator(s)"
                      + (", executed" if args.execute else ", not executed")) if on else ""
    print(f"triage-agent serve: listening on http://{host}:{port} (namespaces "
          f"{','.join(args.ceiling)}, {args.workers} worker(s), outbox {outbox}"
          f"{approvals_said})", file=sys.stderr, flush=True)
    stop.wait()
    print("triage-agent serve: stopping: no new alerts; waiting for running triages",
          file=sys.stderr, flush=True)
    engine.drain(args.drain_seconds)
    if store is not None:  # a watch ends at its next wait; its unknown is written and forwarded
        store.join_watches(10)
    if forwarder:
        forwarder.close(args.drain_seconds)
    if slack:
        slack.close(min(args.drain_seconds, 10.0))
    server.shutdown()
    server.server_close()
    print("triage-agent serve: stopped", file=sys.stderr, flush=True)
    return 0
