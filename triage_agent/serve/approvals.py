"""Pending approvals: a serve run's proposal kept for an operator, decided once, run at most once.

A run's CLI child (started with --pending-approvals OUTBOX/RUN_ID) hands each proposal of an
enabled kind over with `handoff`: one file OUTBOX/RUN_ID.approval.ID.json, written atomically, in
state pending. From then on serve's `Store` owns it:

    pending --deny------------------------------> denied
    pending --decision or read after expires_at-> expired          (never runs)
    pending --approve, serve without --execute--> approved_not_run (the command, to run by hand)
    pending --approve, serve --execute----------> executing --> executed | failed
    executed, watched (verify, in a thread)-----> executed with its `verification`
    executing, found when serve starts----------> unknown          ("check the cluster"; never
                                                                   run again)

A decision names the argv it approves by `argv_sha256` (hex SHA-256 of the UTF-8 bytes of
json.dumps(argv)); it is taken under a lock (a thread lock and an flock on OUTBOX/.approvals.lock)
and its new state is on disk before anything runs, so two concurrent approvals run kubectl once.
Each decision is appended to the run's audit log before its state is written; a decision whose
audit entry cannot be written is not taken. `changed(record)` hears of every settled change (the
engine updates the run's outcome file with it, see outcomes.py).
"""

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from mcp_kubectl_server.redact import redact
from triage_agent import actions
from triage_agent.serve.runs import RUN_ID, write_atomically

ID = re.compile(r"^ap-[0-9a-f]{16}$")
STATES = ("pending", "denied", "expired", "approved_not_run", "executing", "executed", "failed",
          "unknown")
DEFAULT_TTL = 900.0
WAITING = "waiting for an operator (approval {id}); it has not run"
UNKNOWN_NOTE = ("serve stopped while kubectl ran this command: whether it took effect is "
                "unknown; check the cluster. It is never run again.")


def argv_sha256(argv) -> str:
    """Hex SHA-256 of the UTF-8 bytes of json.dumps(argv) (default separators)."""
    return hashlib.sha256(json.dumps(argv).encode("utf-8")).hexdigest()


def iso(seconds) -> str:
    """Unix seconds as UTC ISO 8601 with milliseconds and a Z."""
    stamp = datetime.fromtimestamp(seconds, timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds_of(text) -> float:
    """The Unix seconds of an `iso` time stamp (0 for anything unreadable: already past)."""
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def handoff(prefix, *, alert=None, ttl=DEFAULT_TTL, clock=time.time):
    """The run child's defer seam: proposal -> note, after writing its pending approval file."""
    prefix = Path(prefix)

    def defer(proposal):
        approval_id = "ap-" + secrets.token_hex(8)
        now = clock()
        write_atomically(prefix.parent / f"{prefix.name}.approval.{approval_id}.json", {
            "id": approval_id, "run_id": prefix.name, "alert": alert, "kind": proposal.kind,
            "namespace": proposal.namespace, "target": proposal.target,
            "argv": list(proposal.argv), "argv_sha256": argv_sha256(list(proposal.argv)),
            "command": proposal.command, "reason": proposal.reason, "summary": None,
            "evidence": [], "created_at": iso(now), "expires_at": iso(now + ttl),
            "state": "pending", "decided_by": None, "decided_at": None, "exit_code": None,
            "output": "", "note": "", "seen": list(proposal.seen), "verification": None})
        return WAITING.format(id=approval_id)
    return defer


def command_check(*, kinds, ceiling, context, kubeconfig):
    """record -> None, or why serve would not run it: the kind must be enabled, the arguments
    valid and in scope, and the stored argv exactly the one serve builds for them (a forged or
    edited approval file runs nothing)."""
    def check(record):
        if record.get("kind") not in kinds:
            return f"kind {record.get('kind')!r} is not enabled in this serve (--allow-action)"
        fields = {key: record.get(key) for key in ("kind", "namespace", "target", "reason")}
        problem = actions.check_proposal(fields, ceiling)
        if problem:
            return problem
        argv = actions.build_argv(fields["kind"], fields["namespace"], fields["target"],
                                  context=context, kubeconfig=kubeconfig)
        if record.get("argv") != argv or record.get("argv_sha256") != argv_sha256(argv):
            return "the stored argv is not the command serve builds for this action"
        return None
    return check


class DecisionError(Exception):
    """A decision that is not taken: its HTTP status and reason."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Store:
    """Every approval in one outbox: read from disk on each look, changed only under the lock."""

    def __init__(self, outbox, *, execute=False, runner=actions.run_command, rebuild=None,
                 clock=time.time, changed=None, verify=None):
        self.outbox = Path(outbox)
        self.execute, self.runner, self.clock = execute, runner, clock
        self.verify = verify        # record -> Verification dict, after it executed (verify.py)
        self.watches = []           # the threads watching executed approvals
        self.rebuild = rebuild      # record -> the argv serve itself would run, or a problem str
        self.changed = changed or (lambda record: None)
        self.counts = dict.fromkeys(("approved", "denied", "expired", "executed", "failed"), 0)
        self._lock = threading.Lock()
        self.outbox.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def locked(self):
        """The decision lock: this process's threads and any other serve on the same outbox."""
        with self._lock, open(self.outbox / ".approvals.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _paths(self, run_id="*"):
        return sorted(self.outbox.glob(f"{run_id}.approval.ap-*.json"))

    def _path(self, approval_id):
        if not ID.match(approval_id or ""):
            return None
        found = self._paths_for(approval_id)
        return found[0] if found else None

    def _paths_for(self, approval_id):
        return list(self.outbox.glob(f"r-*.approval.{approval_id}.json"))

    @staticmethod
    def _read(path):
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        # a file is taken only under its own name: its id and run id are the ones it is filed as
        # (the run id names the audit log a decision is appended to)
        ok = (isinstance(record, dict) and record.get("state") in STATES
              and ID.match(str(record.get("id"))) and RUN_ID.match(str(record.get("run_id")))
              and Path(path).name == f"{record['run_id']}.approval.{record['id']}.json")
        return record if ok else None

    def recover(self) -> list:
        """At start: every approval left `executing` becomes `unknown` (never run again)."""
        found = []
        with self.locked():
            for path in self._paths():
                record = self._read(path)
                if record and record["state"] == "executing":
                    self._settle(path, record, "unknown", note=UNKNOWN_NOTE)
                    found.append(record)
        for record in found:
            self.changed(record)
        return found

    def get(self, approval_id):
        """One approval (expired first if its time is up), or None."""
        path = self._path(approval_id)
        record = self._read(path) if path else None
        return self._expire_if_due(path, record) if record else None

    def list(self, run_id="*") -> list:
        """All approvals (or one run's), newest first, each expired first if its time is up."""
        records = [(path, self._read(path)) for path in self._paths(run_id)]
        records = [self._expire_if_due(path, rec) for path, rec in records if rec]
        return sorted(records, key=lambda rec: rec["created_at"], reverse=True)

    def _expire_if_due(self, path, record):
        if not self._due(record):
            return record
        with self.locked():
            record = self._read(path) or record
            if self._due(record):
                self._settle(path, record, "expired", note="expired before any decision")
                self.counts["expired"] += 1
                expired = True
            else:
                expired = False
        if expired:
            self.changed(record)
        return record

    def decide(self, approval_id, *, decision, digest, operator) -> dict:
        """Take one operator's decision; the record after it, or DecisionError (nothing changed)."""
        if decision not in ("approve", "deny"):
            raise DecisionError(400, "decision must be \"approve\" or \"deny\"")
        if not isinstance(digest, str) or not digest:
            raise DecisionError(400, "argv_sha256 is required: the digest of the command you "
                                "approve or deny")
        path = self._path(approval_id)
        if path is None:
            raise DecisionError(404, "no such approval")
        with self.locked():  # from the check to the new state on disk: one decision at a time
            record = self._read(path)
            if record is None:
                raise DecisionError(404, "no such approval")
            state = self._take(path, record, decision, digest, operator)
        if state == "executing":
            return self._run(path, record)
        self.changed(record)
        if state == "expired":  # its time was up when the decision came: it never runs
            self._check(record, digest)
        return record

    def _take(self, path, record, decision, digest, operator) -> str:
        """With the lock held: the new state after checks, audit entry, write."""
        if self._due(record):
            self._settle(path, record, "expired", note="expired before any decision")
            self.counts["expired"] += 1
            return "expired"
        self._check(record, digest)
        state = ("denied" if decision == "deny" else
                 "executing" if self.execute else "approved_not_run")
        self._audit(record, f"approval_{decision}d", operator=operator, digest=digest)
        record.update(decided_by=operator, decided_at=iso(self.clock()))
        if state == "approved_not_run":
            record["note"] = ("approved; serve does not execute (--execute is off): run it by "
                              "hand: " + record["command"])
        self._settle(path, record, state, audit=False)
        self.counts["denied" if decision == "deny" else "approved"] += 1
        return state

    def _due(self, record) -> bool:
        """True for a pending approval whose expires_at has come."""
        return record["state"] == "pending" and self.clock() >= seconds_of(record["expires_at"])

    def _check(self, record, digest):
        state = record["state"]
        if state == "expired":
            raise DecisionError(410, f"approval expired at {record['expires_at']}; it never runs")
        if state != "pending":
            by = f" by {record['decided_by']}" if record.get("decided_by") else ""
            raise DecisionError(409, f"already decided: {state}{by}; a decision is taken once")
        if not secrets.compare_digest(digest.encode(), record["argv_sha256"].encode()):
            raise DecisionError(409, "argv_sha256 does not match the pending command: reload "
                                "the approval and decide on what it shows")
        problem = self.rebuild(record) if self.rebuild else None
        if problem:
            raise DecisionError(409, f"not taken: {problem}")

    def _run(self, path, record):
        try:
            code, stdout, stderr = self.runner(list(record["argv"]))
        except Exception as exc:  # a runner that raises is a command that did not run
            code, stdout, stderr = None, "", f"could not run: {type(exc).__name__}: {exc}"
        output = "\n".join(str(part) for part in (stdout, stderr) if part)
        state = "executed" if code == 0 else "failed"
        with self.locked():
            record.update(exit_code=code if isinstance(code, int) else None,
                          output=actions.trim_output(redact(output)))
            self._settle(path, record, state)
            self.counts[state] += 1
        self.changed(record)
        if state == "executed" and self.verify is not None:
            watching = threading.Thread(target=self._watch, args=(path, dict(record)),
                                        daemon=True, name=f"watch-{record['id']}")
            self.watches.append(watching)
            watching.start()
        return record

    def join_watches(self, timeout):
        """Wait up to `timeout` seconds for the watches still going (serve is stopping)."""
        end = time.monotonic() + timeout
        for watching in list(self.watches):
            watching.join(max(0.0, end - time.monotonic()))

    def _watch(self, path, record):
        """Watch what an executed approval did; its verification goes into the record, the
        run's audit log and (changed) the outcome file. A watch that fails is unknown."""
        try:
            found = self.verify(record)
        except Exception as exc:   # a watch that breaks could not tell: unknown
            from triage_agent.actions import watch
            found = watch.broken(exc, wall=self.clock)
        with self.locked():
            record = self._read(path) or record
            record["verification"] = found
            write_atomically(path, record)
            try:
                self._audit(record, "approval_verification", operator=record.get("decided_by"),
                            digest=record["argv_sha256"], **{key: found.get(key) for key in (
                                "state", "observed", "checked_at", "waited_s")})
            except DecisionError as exc:
                record["audit_error"] = str(exc)
                write_atomically(path, record)
        self.changed(record)

    def _settle(self, path, record, state, *, note=None, audit=True):
        """With the lock held: write the new state, then its audit entry (a decision's own entry
        was written before, by decide: a decision that cannot be audited is not taken; a state
        that follows from one is kept even when its entry cannot be, and says so)."""
        record["state"] = state
        if note is not None:
            record["note"] = note
        write_atomically(path, record)
        if audit:
            try:
                self._audit(record, f"approval_{state}", operator=record.get("decided_by"),
                            digest=record["argv_sha256"])
            except DecisionError as exc:
                record["audit_error"] = str(exc)
                write_atomically(path, record)

    def _audit(self, record, decision, *, operator, digest, **extra):
        """Append one entry to the run's audit log; an OSError here means nothing is decided."""
        entry = {"time": iso(self.clock()), "step": None, "tool": "propose_action",
                 "arguments": {key: record[key] for key in ("kind", "namespace", "target")},
                 "decision": decision, "approval_id": record["id"], "operator": operator,
                 "argv_sha256": digest, **extra}
        if record.get("exit_code") is not None and decision in ("approval_executed",
                                                               "approval_failed"):
            entry["exit_code"] = record["exit_code"]
        line = (json.dumps(entry) + "\n").encode()
        path = self.outbox / f"{record['run_id']}.audit.jsonl"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise DecisionError(500, f"the run's audit log cannot be written ({exc.strerror}); "
                                "nothing was decided") from None
        try:
            os.write(fd, line)  # one write: the run child may append to the same file
            os.fsync(fd)
        except OSError as exc:
            raise DecisionError(500, f"the run's audit log cannot be written ({exc.strerror}); "
                                "nothing was decided") from None
        finally:
            os.close(fd)

    def attach(self, run_id, report, sources, *, only_new=False):
        """When the run ends: its report's summary and evidence (with each quote's source) go
        into each of its approvals; when a follow-up is answered (`only_new`), its answer goes
        into the approvals it handed over, which have none yet."""
        report = report if isinstance(report, dict) else {}
        evidence = [dict(item, source=sources.get(item.get("tool_use_id")))
                    for item in report.get("evidence") or () if isinstance(item, dict)]
        with self.locked():
            for path in self._paths(run_id):
                record = self._read(path)
                if record and not (only_new and record.get("summary") is not None):
                    record.update(summary=report.get("summary"), evidence=evidence)
                    write_atomically(path, record)

    def pending_count(self) -> int:
        return sum(record["state"] == "pending" for record in self.list())
