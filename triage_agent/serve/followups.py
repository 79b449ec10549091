"""Follow-up questions to a finished run under serve: kept as files, run on the alerts' workers.

    POST /api/runs/ID/questions        {"question": "..."} (at most 2,000 characters)
        202 {"id", "run_id", "state": "queued", ...} · 400 no usable question
        401/403 as for approvals (an operator's token; never the webhook token)
        404 unknown run · 409 no session, another follow-up of the run queued or running, or
        --max-followups reached · 503 the queue is full or serve is stopping
    GET  /api/runs/ID/questions        200 {"questions": [question, ...]} oldest first
    GET  /api/runs/ID/questions/QID    200 question | 404

    question: queued -> running -> answered | failed     (OUTBOX/RUN_ID.question.QID.json)

A question is a task on the engine's queue, behind the alerts already there; its worker runs
`python -m triage_agent ask --json ... -- OUTBOX/RUN_ID.session.json QUESTION` with the run's
audit and trace files (appended) and, with --operators, its proposals handed over as pending
approvals like the run's. At most one follow-up of a run is queued or running at a time. A
revised report goes into the outcome file (outcomes.OutcomeWriter.revised), which is forwarded.
"""

import json
import re
import secrets
import sys
import threading
from pathlib import Path

from triage_agent.serve import outcomes, runs
from triage_agent.serve.runs import RUN_ID, now_iso, write_atomically

ID = re.compile(r"^q-[0-9a-f]{16}$")
STATES = ("queued", "running", "answered", "failed")
MAX_QUESTION_CHARS = 2000
DEFAULT_MAX_FOLLOWUPS = 20
# run options an `ask` child takes too (flags with a value; the two without one below)
ASK_VALUE_FLAGS = ("--model", "--effort", "--max-tokens", "--base-url", "--api-profile",
                   "--price-per-mtok", "--prices-file", "--idle-timeout", "--first-byte-timeout",
                   "--max-cost-usd")
ASK_BARE_FLAGS = ("--no-fallbacks", "--no-stream")


class QuestionError(Exception):
    """A question refused, with its HTTP status."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def ask_args(run_args) -> list:
    """The run options an `ask` child is given: model and endpoint ones, never budgets (a
    follow-up has its own) or a replay fixture (that is the run's)."""
    out, args = [], list(run_args)
    for i, arg in enumerate(args):
        name = arg.split("=")[0]
        if name in ASK_BARE_FLAGS:
            out.append(arg)
        elif name in ASK_VALUE_FLAGS:
            out += [arg] if "=" in arg else args[i:i + 2]
    return out


class Questions:
    """The follow-up questions of serve's runs: files in the outbox, and the tasks that run them."""

    def __init__(self, outbox, *, engine, runner, max_followups=DEFAULT_MAX_FOLLOWUPS,
                 revised=None, answered=None, ended=None):
        self.outbox, self.engine, self.runner = Path(outbox), engine, runner
        self.max_followups = max_followups
        self.revised = revised or (lambda run_id, report, record: None)
        self.answered = answered or (lambda record: None)   # e.g. attach_answer
        self.ended = ended or (lambda record: None)         # answered or failed (Slack's thread)
        self.counts = dict.fromkeys(STATES, 0)   # questions that entered each state
        self._lock = threading.Lock()            # asking: the checks and the new record
        self._counting = threading.Lock()

    def _path(self, run_id, qid):
        return self.outbox / f"{run_id}.question.{qid}.json"

    def list(self, run_id) -> list:
        records = []
        for path in self.outbox.glob(f"{run_id}.question.q-*.json"):
            try:
                records.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return sorted(records, key=lambda r: (r.get("asked_at") or "", r.get("id") or ""))

    def get(self, run_id, qid):
        if not ID.match(qid or "") or not RUN_ID.match(run_id or ""):
            return None
        try:
            return json.loads(self._path(run_id, qid).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _write(self, record):
        write_atomically(self._path(record["run_id"], record["id"]), record)
        with self._counting:
            self.counts[record["state"]] += 1

    def ask(self, run_id, question, operator) -> dict:
        """Queue a question (QuestionError when it cannot be asked); returns its record."""
        if not isinstance(question, str) or not question.strip():
            raise QuestionError(400, "the body must be a JSON object with a non-empty question")
        if len(question) > MAX_QUESTION_CHARS:
            raise QuestionError(400, f"the question is longer than {MAX_QUESTION_CHARS} "
                                "characters")
        if not RUN_ID.match(run_id or "") or not (self.outbox / f"{run_id}.json").is_file():
            raise QuestionError(404, "no such run (or it has not ended yet)")
        if not (self.outbox / f"{run_id}.session.json").is_file():
            raise QuestionError(409, "this run has no session to ask: it ended before its "
                                "conversation could be kept")
        with self._lock:
            asked = self.list(run_id)
            busy = [r["id"] for r in asked if r.get("state") in ("queued", "running")]
            if busy:
                raise QuestionError(409, f"follow-up {busy[0]} of this run is still "
                                    "queued or running: ask when it has finished")
            if len(asked) >= self.max_followups:
                raise QuestionError(409, f"this run has had {len(asked)} follow-ups, the most "
                                    f"serve allows (--max-followups {self.max_followups})")
            record = {"id": "q-" + secrets.token_hex(8), "run_id": run_id,
                      "question": question.strip(), "asked_by": operator, "state": "queued",
                      "asked_at": now_iso(), "started_at": None, "finished_at": None,
                      "followup": None, "stop": None, "answer": None, "evidence": [],
                      "report_changed": False, "grounding_warnings": [], "error": None,
                      "cost_usd": None, "exit_code": None}
            self._write(record)
            if not self.engine.submit(Task(self, record)):
                record.update(state="failed", finished_at=now_iso(),
                              error="the service is busy or stopping: ask again later")
                self._write(record)
                raise QuestionError(503, record["error"])
        return record

    def run(self, record, register):
        """The worker's part: run the `ask` child, then record what came of it."""
        record = dict(record, state="running", started_at=now_iso())
        self._write(record)
        try:
            code, outcome, error = self.runner(record, register)
        except Exception as exc:  # a runner bug costs one follow-up, never the service
            code, outcome, error = None, None, f"runner failed: {type(exc).__name__}: {exc}"
        self.finish(record, code, outcome, error)

    def finish(self, record, code, outcome, error):
        outcome = outcome if isinstance(outcome, dict) else {}
        answer = outcome.get("answer") if isinstance(outcome.get("answer"), dict) else None
        record = dict(record, state="answered" if answer else "failed", exit_code=code,
                      finished_at=now_iso(), followup=outcome.get("followup"),
                      stop=outcome.get("stop"), cost_usd=outcome.get("cost_usd"),
                      error=None if answer else (outcome.get("error") or error or
                                                 f"no answer (stop {outcome.get('stop')})"))
        if answer:
            record.update(answer=answer.get("answer"), evidence=answer.get("evidence") or [],
                          report_changed=bool(answer.get("report_changed")),
                          grounding_warnings=outcome.get("grounding_warnings") or [])
        if answer:  # what the answer changes first, so that `answered` is seen with it done
            self.answered(record)
        if answer and answer.get("report_changed") and isinstance(answer.get("report"), dict):
            self.revised(record["run_id"], answer["report"], record)
        self._write(record)
        try:
            self.ended(record)
        except Exception as exc:  # a listener's bug never costs the answer
            print(f"triage-agent serve: follow-up listener: {exc}", file=sys.stderr, flush=True)
        return record

    def abandon(self, record, reason):
        """Serve stopped before the question ran: it fails, with the reason."""
        self._write(dict(record, state="failed", finished_at=now_iso(), error=reason))


def attach_answer(store, outbox):
    """`answered` for serve with approvals: an approval a follow-up handed over gets its
    answer and evidence, as a run's approvals get the run's report."""
    def attach(record):
        sources = outcomes.read_sources(Path(outbox) / f"{record['run_id']}.audit.jsonl")
        store.attach(record["run_id"], {"summary": f"follow-up {record['followup']}: "
                                        f"{record['answer']}", "evidence": record["evidence"]},
                     sources, only_new=True)
    return attach


class Task:
    """A follow-up on the engine's queue (runs.Engine runs tasks beside alerts)."""

    def __init__(self, questions, record):
        self.questions, self.record = questions, record
        self.key = record["id"]

    def run(self, register):
        self.questions.run(self.record, register)

    def abandon(self, reason):
        self.questions.abandon(self.record, reason)


def ask_runner(*, outbox, run_args, python=sys.executable, env=None, approval_ttl=None):
    """The real runner: `python -m triage_agent ask --json ...` as a child with no terminal."""
    outbox = Path(outbox)
    passed = ask_args(run_args)

    def run(record, register):
        base = outbox / record["run_id"]
        argv = [python, "-m", "triage_agent", "ask", "--json",
                "--audit-log", str(base.with_suffix(".audit.jsonl")),
                "--trace", str(base.with_suffix(".trace.jsonl")), *passed]
        if approval_ttl is not None:
            argv += ["--pending-approvals", str(base), "--approval-ttl", str(approval_ttl)]
        argv += ["--", str(base.with_suffix(".session.json")), record["question"]]
        return runs.run_child(argv, env=env, register=register, what="the follow-up",
                              log_path=outbox / f"{record['run_id']}.question.{record['id']}.log")
    return run
