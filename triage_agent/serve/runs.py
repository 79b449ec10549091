"""The triage service's engine: accepted alerts -> a bounded queue -> N workers -> one outcome file.

    accept(alert) -> ("queued", run_id) | ("deduplicated", run_id) | ("full", None)
                     | ("draining", None)
    worker:  queued -> running (runner(job, register)) -> outcome file (+ forward) -> done
    drain(deadline): no more accepting; running runs may finish until the deadline, then each
                     gets SIGINT, the way ^C stops a CLI run; queued runs that never started are
                     written out as not run. Nothing accepted ends without its outcome file.

An alert is known by its fingerprint: one that is queued or running, or that finished within
`dedup_seconds`, starts no second run. At most `workers` runners run at once. Every outcome file
is written atomically (temp file, then rename) as OUTBOX/RUN_ID.json; the run's audit, trace,
alert and stderr sit beside it. The runner is a seam: the real one (cli_runner) runs the triage
CLI as a child process with the run's own MCP server, budgets and records.
"""

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path


@dataclass
class Job:
    run_id: str
    alert: dict            # one firing alert as alerts.parse_payload gives it
    received_at: str
    started_at: str = None
    arrival: int = 0       # the engine's count of alerts received when this one came: ties of
    # received_at (same millisecond) list in the order they arrived


@dataclass
class Stats:
    """What /metrics shows; guarded by the engine's lock."""
    received: int = 0
    deduplicated: int = 0
    refused: dict = field(default_factory=dict)     # reason -> count
    runs: dict = field(default_factory=dict)        # stop -> count
    tool_calls: int = 0
    cost_usd: float = 0.0
    durations: list = field(default_factory=list)   # seconds of each finished run
    forward_failures: int = 0


def now_iso(now=None):
    now = now or datetime.now(timezone.utc)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


RUN_ID = re.compile(r"^r-[0-9TZ]{15}-[0-9a-f]{8}$")  # what new_run_id makes


def new_run_id(now=None):
    """r-YYYYMMDDTHHMMSS-RANDOM: one-second resolution, so ids sort by time only to the second
    (the run list orders by received_at and arrival: received_order)."""
    now = now or datetime.now(timezone.utc)
    return "r-" + now.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


def received_order(doc):
    """Sort key of an outcome document by when its alert was received: the millisecond, then
    the order of arrival within it (documents from before `arrival` existed count as 0)."""
    arrival = doc.get("arrival")
    return str(doc.get("received_at") or ""), arrival if isinstance(arrival, int) else 0


def write_atomically(path, doc):
    """Write JSON to path through a temp file and a rename: readers see all of it or nothing."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class Engine:
    """The queue, the workers and the outbox; thread-safe."""

    def __init__(self, *, runner, outbox, workers=2, queue_size=100, dedup_seconds=3600.0,
                 on_outcome=None, clock=time.monotonic, write_outcome=None, on_start=None):
        self.runner, self.outbox = runner, Path(outbox)
        self.workers, self.queue_size, self.dedup_seconds = workers, queue_size, dedup_seconds
        self.on_outcome = on_outcome or (lambda doc: None)
        self.on_start = on_start or (lambda job: None)   # a worker took the job (Slack's root)
        # doc -> None: writes the outcome file and forwards it (serve's approvals merge in there)
        self.write_outcome = write_outcome
        self.clock = clock
        self.stats = Stats()
        self._lock = threading.Condition()
        self._queue = deque()
        self._running = {}       # run_id -> Job
        self._live = {}          # run_id -> process (or anything with send_signal)
        self._known = {}         # fingerprint -> (state, run_id, when)
        self._draining = False
        self._interrupting = False  # the drain deadline passed: runs that start now stop at once
        self._threads = []
        self.outbox.mkdir(parents=True, exist_ok=True)

    def start(self):
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"triage-worker-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    # --- intake -------------------------------------------------------------------------------

    def accept(self, alert):
        """Queue one firing alert unless it is a duplicate, the queue is full or we drain."""
        fingerprint = alert["fingerprint"]
        with self._lock:
            self.stats.received += 1
            if self._draining:
                return self._refuse("draining")
            known = self._known.get(fingerprint)
            if known and (known[0] != "done" or self.clock() - known[2] < self.dedup_seconds):
                self.stats.deduplicated += 1
                return "deduplicated", known[1]
            if len(self._queue) >= self.queue_size:
                return self._refuse("queue_full")
            now = datetime.now(timezone.utc)   # one instant: the id's second is received_at's
            job = Job(new_run_id(now), alert, now_iso(now), arrival=self.stats.received)
            self._queue.append(job)
            self._known[fingerprint] = ("queued", job.run_id, self.clock())
            self._lock.notify()
            return "queued", job.run_id

    def submit(self, task) -> bool:
        """Queue a task (a follow-up: .key, .run(register), .abandon(reason)) behind the alerts
        already waiting; False when the queue is full or the service is draining."""
        with self._lock:
            if self._draining or len(self._queue) >= self.queue_size:
                return False
            self._queue.append(task)
            self._lock.notify()
            return True

    def refuse(self, reason, count=1):
        """Count alerts refused before they reached the queue (bad payload, token, scope)."""
        with self._lock:
            self.stats.refused[reason] = self.stats.refused.get(reason, 0) + count

    def _refuse(self, reason):
        self.stats.refused[reason] = self.stats.refused.get(reason, 0) + 1
        return reason, None

    def status(self, run_id):
        """'queued', 'running', or None (finished or unknown: look in the outbox)."""
        with self._lock:
            if run_id in self._running:
                return "running"
            return "queued" if any(getattr(job, "run_id", None) == run_id
                                   for job in self._queue) else None

    def gauges(self):
        with self._lock:
            return {"queue_depth": len(self._queue), "running": len(self._running),
                    "draining": self._draining}

    # --- workers ------------------------------------------------------------------------------

    def _work(self):
        while True:
            with self._lock:
                while not self._queue and not self._draining:
                    self._lock.wait()
                if self._draining:
                    return
                job = self._queue.popleft()
                if isinstance(job, Job):
                    job.started_at = now_iso()
                    self._running[job.run_id] = job
                    self._known[job.alert["fingerprint"]] = ("running", job.run_id, self.clock())
                else:
                    self._running[job.key] = job
            if not isinstance(job, Job):
                self._run_task(job)
                continue
            started = time.monotonic()
            try:
                self.on_start(job)
            except Exception as exc:  # a listener's bug never costs the run
                print(f"triage-agent serve: on_start: {exc}", file=sys.stderr, flush=True)
            try:
                code, outcome, error = self.runner(job, lambda proc: self._register(job, proc))
            except Exception as exc:  # a runner bug costs one run, never the service
                code, outcome, error = None, None, f"runner failed: {type(exc).__name__}: {exc}"
            self._finish(job, code, outcome, error, time.monotonic() - started)

    def _run_task(self, task):
        try:
            task.run(lambda proc: self._register(task, proc, key=task.key))
        except Exception as exc:  # a task's bug costs that task, never a worker
            print(f"triage-agent serve: task {task.key} failed: {exc}", file=sys.stderr)
        finally:
            with self._lock:
                self._running.pop(task.key, None)
                self._live.pop(task.key, None)
                self._lock.notify_all()

    def _register(self, job, proc, *, key=None):
        with self._lock:
            self._live[key or job.run_id] = proc
            stopping = self._interrupting
        if stopping:
            _interrupt(proc)

    def _finish(self, job, code, outcome, error, seconds):
        with self._lock:
            cut_short = self._interrupting
        status = "done" if outcome else ("interrupted" if cut_short else "failed")
        stop = (outcome or {}).get("stop") or status
        doc = {"run_id": job.run_id, "status": status,
               "alert": _identity(job.alert), "received_at": job.received_at,
               "arrival": job.arrival, "started_at": job.started_at, "finished_at": now_iso(),
               "exit_code": code, "outcome": outcome, "error": error}
        self._write(doc)
        with self._lock:
            self._running.pop(job.run_id, None)
            self._live.pop(job.run_id, None)
            self._known[job.alert["fingerprint"]] = ("done", job.run_id, self.clock())
            self.stats.runs[stop] = self.stats.runs.get(stop, 0) + 1
            self.stats.tool_calls += int((outcome or {}).get("tool_calls") or 0)
            self.stats.cost_usd += float((outcome or {}).get("cost_usd") or 0.0)
            self.stats.durations.append(seconds)
            self._lock.notify_all()

    def _write(self, doc):
        if self.write_outcome is not None:
            return self.write_outcome(doc)
        write_atomically(self.outbox / f"{doc['run_id']}.json", doc)
        self.on_outcome(doc)

    def wait_idle(self, timeout):
        """True once nothing is queued or running (False after `timeout` seconds)."""
        end = time.monotonic() + timeout
        with self._lock:
            while self._queue or self._running:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True

    # --- shutdown -----------------------------------------------------------------------------

    def drain(self, deadline_seconds, *, kill_after=10.0):
        """Stop accepting; let running runs finish until the deadline, then interrupt them (and
        kill what still runs `kill_after` seconds later); write every queued run out as not run.
        Returns when no run is left."""
        with self._lock:
            self._draining = True
            left = list(self._queue)
            self._queue.clear()
            self._lock.notify_all()
        for task in [job for job in left if not isinstance(job, Job)]:
            task.abandon("the service stopped before this follow-up started")
        for job in [job for job in left if isinstance(job, Job)]:
            self._write({"run_id": job.run_id, "status": "not_run", "alert": _identity(job.alert),
                         "received_at": job.received_at, "arrival": job.arrival,
                         "started_at": None,
                         "finished_at": now_iso(), "exit_code": None, "outcome": None,
                         "error": "the service stopped before this run started"})
            with self._lock:
                self.stats.runs["not_run"] = self.stats.runs.get("not_run", 0) + 1
        with self._lock:
            self._wait_for_runs(deadline_seconds)
            self._interrupting = True
            for proc in self._live.values():
                _interrupt(proc)
            if not self._wait_for_runs(kill_after):
                for proc in self._live.values():
                    _interrupt(proc, kill=True)
            while self._running:
                self._lock.wait()
        for thread in self._threads:
            thread.join()


    def _wait_for_runs(self, seconds):
        """With the lock held: True once no run is left, False when `seconds` passed first."""
        end = time.monotonic() + seconds
        while self._running:
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._lock.wait(left)
        return True


def _interrupt(proc, *, kill=False):
    """SIGINT: the CLI ends its run as 'interrupted' and still prints its outcome; kill is for a
    run that ignored it."""
    try:
        proc.kill() if kill else proc.send_signal(signal.SIGINT)
    except (OSError, ProcessLookupError):
        pass


def _identity(alert):
    return {"fingerprint": alert["fingerprint"], "alertname": alert["labels"]["alertname"],
            "generatorURL": alert["generatorURL"]}


def cli_runner(*, ceiling, run_args, outbox, python=sys.executable, env=None,
               approval_ttl=None):
    """The real runner: `python -m triage_agent --alert FILE --json ...` as a child process with
    no terminal (approval fails closed), its own audit, trace and session in the outbox. With
    `approval_ttl` each proposal of an enabled kind becomes a pending approval beside the run
    (--pending-approvals OUTBOX/RUN_ID) that expires that many seconds later."""
    outbox = Path(outbox)

    def run(job, register):
        base = outbox / job.run_id
        alert_file = base.with_suffix(".alert.json")
        write_atomically(alert_file, dict(job.alert, status="firing"))
        argv = [python, "-m", "triage_agent", "--alert", str(alert_file), "--namespaces",
                ",".join(ceiling), "--json", "--audit-log", str(base.with_suffix(".audit.jsonl")),
                "--trace", str(base.with_suffix(".trace.jsonl")),
                "--session", str(base.with_suffix(".session.json")), *run_args]
        if approval_ttl is not None:
            argv += ["--pending-approvals", str(base), "--approval-ttl", str(approval_ttl)]
        return run_child(argv, env=env, log_path=base.with_suffix(".log"), register=register,
                         what="the triage run")
    return run


def run_child(argv, *, env, log_path, register, what):
    """(exit code, the --json outcome it printed or None, why not): one CLI child with no
    terminal, in a session of its own (`register` lets a stop end it), stderr kept at log_path."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=log, env=env, start_new_session=True)
        register(proc)
        out, _ = proc.communicate()
    try:
        return proc.returncode, json.loads(out), None
    except ValueError:
        tail = log_path.read_text(errors="replace")[-500:]
        return proc.returncode, None, (f"{what} printed no outcome (exit {proc.returncode}): "
                                       f"{tail.strip()}")
