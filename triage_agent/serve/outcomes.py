"""A run's outcome file as its approvals change: written once when the run ends, rewritten
(atomically) at every settled change of one of its approvals, and forwarded each time.

    doc["approvals"]                 one entry per approval of the run, with its approval_url
    doc["outcome"]["actions_taken"]  executed | failed | approved_not_run | denied, as the run's
                                     own proposals came out, plus each approval under its state:
                                     pending_approval, denied, expired, approved_not_run,
                                     executing, executed, failed, unknown

One lock covers reading the approvals, merging and writing, both at the run's end and at a
change, so whichever comes second sees the other's state.
"""

import json
import threading
from pathlib import Path

from triage_agent import report

TAKEN_KEYS = {"pending": "pending_approval", "denied": "denied", "expired": "expired",
              "approved_not_run": "approved_not_run", "executing": "executing",
              "executed": "executed", "failed": "failed", "unknown": "unknown"}
SHOWN = ("id", "state", "approval_url", "kind", "namespace", "target", "command", "argv_sha256",
         "created_at", "expires_at", "decided_by", "decided_at", "exit_code", "note",
         "verification")


def approval_url(base_url, approval_id) -> str:
    return f"{base_url.rstrip('/')}/approvals/{approval_id}"


def public(record, base_url) -> dict:
    """An approval as the API shows it: the record with its approval_url."""
    return dict(record, approval_url=approval_url(base_url, record["id"]))


def read_sources(audit_path) -> dict:
    """tool_use_id -> {tool, arguments} of the calls a run executed, from its audit log."""
    sources = {}
    try:
        lines = Path(audit_path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return sources
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("tool_use_id") and entry.get("decision") == "executed":
            sources.setdefault(str(entry["tool_use_id"]), {"tool": entry.get("tool"),
                                                           "arguments": entry.get("arguments")})
    return sources


def merge(doc, records, base_url) -> dict:
    """The outcome document with its approvals' current states in it."""
    doc["approvals"] = [{key: public(record, base_url).get(key) for key in SHOWN}
                        for record in sorted(records, key=lambda rec: rec["created_at"])]
    outcome = doc.get("outcome")
    if not isinstance(outcome, dict):
        return doc
    proposals = [p for p in outcome.get("proposals") or ()
                 if isinstance(p, dict) and p.get("decision") != "pending_approval"]
    taken = report.actions_taken(proposals)
    if doc["approvals"]:
        taken["pending_approval"] = []
    for entry in doc["approvals"]:
        item = {key: entry[key] for key in ("kind", "namespace", "target", "command", "state",
                                            "approval_url", "decided_by", "decided_at")}
        item["approval_id"] = entry["id"]
        if entry["state"] in ("executed", "failed"):
            item["exit_code"] = entry["exit_code"]
        if entry["state"] == "executed":   # None while the watch after it is still going
            item["verification"] = entry.get("verification")
        taken.setdefault(TAKEN_KEYS[entry["state"]], []).append(item)
    outcome["actions_taken"] = taken
    return doc


class OutcomeWriter:
    """Writes outcome files for the engine and rewrites them when an approval changes."""

    def __init__(self, outbox, *, store=None, base_url="", write, forward=None):
        self.outbox, self.store, self.base_url = Path(outbox), store, base_url
        self.write, self.forward = write, forward or (lambda doc: None)
        self._lock = threading.RLock()  # an expiry seen while merging reports back in here

    def finish(self, doc):
        """The run ended: its approvals get the report's summary and evidence; the outcome file
        gets the approvals; then it is forwarded."""
        run_id = doc["run_id"]
        with self._lock:
            if self.store is not None:
                report_doc = (doc.get("outcome") or {}).get("report")
                sources = read_sources(self.outbox / f"{run_id}.audit.jsonl")
                self.store.attach(run_id, report_doc, sources)
                merge(doc, self.store.list(run_id), self.base_url)
            self.write(self.outbox / f"{run_id}.json", doc)
        self.forward(doc)

    def revised(self, run_id, report_doc, question):
        """A follow-up revised the run's report: the outcome file gets it (the old one into
        outcome.report_history), is rewritten atomically and forwarded."""
        path = self.outbox / f"{run_id}.json"
        with self._lock:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            outcome = doc.get("outcome")
            if not isinstance(outcome, dict):
                return None
            outcome.setdefault("report_history", []).append({
                "report": outcome.get("report"), "replaced_by_followup": question.get("followup"),
                "question_id": question.get("id"), "replaced_at": question.get("finished_at")})
            outcome["report"] = report_doc
            self.write(path, doc)
        self.forward(doc)
        return doc

    def changed(self, record):
        """One approval settled: rewrite its run's outcome file (once there is one), forward."""
        path = self.outbox / f"{record['run_id']}.json"
        with self._lock:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None  # the run is still going: its end merges the approval in
            merge(doc, self.store.list(record["run_id"]), self.base_url)
            self.write(path, doc)
        self.forward(doc)
        return doc

