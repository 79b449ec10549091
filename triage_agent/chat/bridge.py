"""serve's side of Slack: a thread per alert fingerprint, the report, approvals by button.

    run starts     first run of a fingerprint: a root message (alert, labels, run link);
                   later runs: a reply in that thread
    run ends       the root is updated with the report (blocks.root_report); each approval of
                   the run a message in the thread with Approve / Deny
    approval       the store changed it (a click, the page, the API, expiry): its message updated
    resolved       Alertmanager's resolved notification: "resolved" in the thread
    mention        the bot mentioned in a thread by a mapped operator: a follow-up question on
                   the thread's latest finished run; its answer posts in the thread
    click          block_actions from Socket Mode: the Slack user must map to an operator
                   (operators file, slack:U...), the button's value names the approval and its
                   full argv_sha256; the decision is the store's, under the API's rules

The mapping (fingerprint -> channel and root ts; approval id -> message ts and the state last
shown) is OUTBOX/slack-threads.json, written atomically at each change, so a restarted serve
keeps its threads. Every Slack call goes through the Poster's queue: nothing here waits on Slack.
"""

import hashlib
import json
import re
import threading
from pathlib import Path

from triage_agent.chat import blocks
from triage_agent.serve import approvals as approvals_mod
from triage_agent.serve.runs import write_atomically

VALUE = re.compile(r"^(ap-[0-9a-f]{16}):([0-9a-f]{64})$")
MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")
# the mapping file stays bounded: the oldest threads and approval messages are forgotten (a run
# of a forgotten fingerprint starts a new thread)
KEPT_THREADS, KEPT_APPROVALS, RUNS_KEPT = 2000, 5000, 50
NOT_OPERATOR = "You are not an operator for this service: your click changed nothing."


def _bound(mapping, most):
    """Forget the oldest entries past `most` (a dict keeps the order they came in)."""
    while len(mapping) > most:
        mapping.pop(next(iter(mapping)))


def report_key(doc) -> str:
    """The run and a digest of its report: what the root shows, to tell when it changed."""
    outcome = doc.get("outcome") if isinstance(doc.get("outcome"), dict) else {}
    shown = json.dumps([outcome.get("report"), outcome.get("stop"), outcome.get(
        "verification")], sort_keys=True, default=str)
    return doc["run_id"] + ":" + hashlib.sha256(shown.encode()).hexdigest()[:16]


def shown_state(record) -> str:
    """What a message shows of an approval: its state, and the watch's verdict once there is
    one (an executed action watched until it worked or did not)."""
    verification = record.get("verification")
    if isinstance(verification, dict) and verification.get("state"):
        return f"{record['state']}/{verification['state']}"
    return record["state"]


class SlackBridge:
    """Reacts to serve's events by queueing Slack calls; decides clicks through the store."""

    def __init__(self, *, poster, channel, outbox, store=None, operators=None, base_url="",
                 questions=None):
        self.poster, self.channel, self.store, self.operators = poster, channel, store, operators
        self.questions = questions   # serve's follow-ups: ask(run_id, question, operator)
        self.base_url = base_url
        self.path = Path(outbox) / "slack-threads.json"
        self._lock = threading.RLock()
        self.state = self._load()

    def _load(self):
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = {}
        state = state if isinstance(state, dict) else {}
        for key in ("threads", "approvals"):
            if not isinstance(state.get(key), dict):
                state[key] = {}
        return state

    def _save(self):
        write_atomically(self.path, self.state)

    def run_url(self, run_id):
        return f"{self.base_url.rstrip('/')}/runs/{run_id}"

    # --- serve's events ---------------------------------------------------------------------

    def run_started(self, run_id, alert):
        """Queue the thread's root (first run of the fingerprint) or a reply in it."""
        fingerprint = alert["fingerprint"]
        with self._lock:
            thread = self.state["threads"].get(fingerprint)
            if thread is None:
                thread = self.state["threads"][fingerprint] = {
                    "channel": self.channel, "ts": None, "alert": alert, "runs": []}
                _bound(self.state["threads"], KEPT_THREADS)
                first = True
            else:
                first = False
            thread["runs"] = thread["runs"][-(RUNS_KEPT - 1):] + [run_id]
            self._save()
        url = self.run_url(run_id)
        if first:
            body = dict(blocks.root_running(alert, url), channel=self.channel)
            self.poster.submit("chat.postMessage", body,
                               then=lambda answer: self._rooted(fingerprint, answer))
        else:
            self._reply(fingerprint, blocks.note(
                f"New run for this alert: {blocks.link(url, run_id)}"))

    def _rooted(self, fingerprint, answer):
        with self._lock:
            thread = self.state["threads"].get(fingerprint)
            if thread is None or not answer.get("ts"):  # forgotten meanwhile (the bound)
                return
            thread["ts"], thread["channel"] = answer["ts"], answer.get("channel") or \
                thread["channel"]
            self._save()

    def _reply(self, fingerprint, message, then=None):
        """A message in the fingerprint's thread; at the channel's top if it has no root."""
        def body():
            with self._lock:
                thread = self.state["threads"].get(fingerprint) or {}
                out = dict(message, channel=thread.get("channel") or self.channel)
                if thread.get("ts"):
                    out["thread_ts"] = thread["ts"]
                return out
        self.poster.submit("chat.postMessage", body, then=then)

    def outcome(self, doc):
        """An outcome file was written (the run ended, or one of its approvals changed)."""
        alert = doc.get("alert") or {}
        fingerprint = alert.get("fingerprint")
        with self._lock:
            thread = self.state["threads"].get(fingerprint)
            if thread is None:
                return
            shown = report_key(doc)   # a follow-up's revised report shows on the root too
            report_due = thread.get("report_key") != shown
            thread["reported"], thread["report_key"] = doc["run_id"], shown
            self._save()
        if report_due:
            message = blocks.root_report(thread.get("alert") or alert, doc,
                                         self.run_url(doc["run_id"]))
            self.poster.submit("chat.update", lambda: self._root_update(fingerprint, message),
                               then=lambda answer: self._rooted(fingerprint, answer))
        for entry in doc.get("approvals") or ():
            self._show_approval(fingerprint, entry.get("id"))

    def _root_update(self, fingerprint, message):
        with self._lock:
            thread = self.state["threads"].get(fingerprint) or {}
            if not thread.get("ts"):  # the root never got through: the report starts the thread
                return "chat.postMessage", dict(message, channel=self.channel)
            return dict(message, channel=thread["channel"], ts=thread["ts"])

    def _show_approval(self, fingerprint, approval_id):
        record = self.store.get(approval_id) if self.store and approval_id else None
        if record is None:
            return
        with self._lock:
            shown = self.state["approvals"].get(approval_id)
            seen = shown_state(record)
            if shown is not None and shown.get("state") == seen:
                return
            new = shown is None
            if new:
                shown = self.state["approvals"][approval_id] = {"fingerprint": fingerprint,
                                                                "ts": None}
                _bound(self.state["approvals"], KEPT_APPROVALS)
            shown["state"] = seen
            self._save()
        names = self.operators.names if self.operators else []
        message = blocks.approval(record, operators=names, run_url=self.run_url(
            record["run_id"]))
        if new:
            self._reply(fingerprint, message, then=lambda answer: self._approval_posted(
                approval_id, answer))
        else:
            self.poster.submit("chat.update", lambda: self._approval_update(approval_id,
                                                                            message))

    def _approval_posted(self, approval_id, answer):
        with self._lock:
            shown = self.state["approvals"][approval_id]
            shown["ts"], shown["channel"] = answer.get("ts"), answer.get("channel")
            self._save()

    def _approval_update(self, approval_id, message):
        with self._lock:
            shown = self.state["approvals"].get(approval_id) or {}
            if not shown.get("ts"):
                return None
            # the latest state, whatever was queued first: two quick changes show the last
            record = self.store.get(approval_id)
            if record is not None:
                message = blocks.approval(record, operators=self.operators.names if
                                          self.operators else [],
                                          run_url=self.run_url(record["run_id"]))
            return dict(message, channel=shown.get("channel") or self.channel, ts=shown["ts"])

    def approval_changed(self, record):
        """The store settled a change (any door): show it on the approval's message."""
        with self._lock:
            shown = self.state["approvals"].get(record["id"])
        if shown is not None:
            self._show_approval(shown["fingerprint"], record["id"])

    def resolved(self, fingerprint):
        """Alertmanager says the alert resolved: say so in its thread (if it has one)."""
        with self._lock:
            known = fingerprint in self.state["threads"]
        if known:
            self._reply(fingerprint, blocks.note(":white_check_mark: resolved (Alertmanager)"))

    # --- Socket Mode ------------------------------------------------------------------------

    def handle(self, kind, payload):
        """One envelope's payload (already acknowledged and deduplicated by SocketMode)."""
        if kind == "interactive" and payload.get("type") == "block_actions":
            self.click(payload)
        elif kind == "events_api" and isinstance(payload.get("event"), dict) and \
                payload["event"].get("type") == "app_mention":
            self.mention(payload["event"])

    def mention(self, event):
        """The bot mentioned in one of our threads: from a mapped operator, a follow-up question
        on the thread's latest finished run (serve's follow-ups, under their rules)."""
        user, channel = event.get("user"), event.get("channel") or self.channel
        thread_ts = event.get("thread_ts")
        if event.get("bot_id") or not isinstance(user, str) or not thread_ts:
            return
        with self._lock:
            found = [(fp, t) for fp, t in self.state["threads"].items()
                     if t.get("ts") == thread_ts and t.get("channel") == channel]
        if not found:
            return
        fingerprint, thread = found[0]
        operator = self.operators.name_for_slack(user) if self.operators else None
        if operator is None:
            return self._ephemeral(channel, user, NOT_OPERATOR.replace("click", "question"))
        question = MENTION.sub("", str(event.get("text") or "")).strip()
        run_id = thread.get("reported")
        if self.questions is None or not run_id:
            return self._ephemeral(channel, user, "No follow-up can be asked here yet: "
                                   + ("serve takes follow-ups only with --operators"
                                      if self.questions is None else "the run has not ended"))
        try:
            record = self.questions.ask(run_id, question, operator)
        except Exception as exc:  # QuestionError: refused under serve's rules, nothing asked
            if getattr(exc, "status", None) is None:
                raise
            return self._ephemeral(channel, user, "Not asked: " + blocks.escape(str(exc)))
        self._reply(fingerprint, blocks.note(
            f"Follow-up {blocks.inert(record.get('id'))} from {blocks.inert(operator)} on "
            f"{blocks.link(self.run_url(run_id), run_id)}: queued"))

    def question_done(self, record):
        """A follow-up ended: its answer (with evidence) or why there is none, in the thread."""
        run_id = record.get("run_id")
        with self._lock:
            found = [fp for fp, t in self.state["threads"].items() if run_id in t["runs"]]
        if found:
            self._reply(found[0], blocks.answer(record, self.run_url(run_id)))

    def click(self, payload):
        """Approve / Deny buttons: a decision under the store's rules, or nothing at all."""
        user = (payload.get("user") or {}).get("id")
        channel = (payload.get("channel") or {}).get("id") or self.channel
        if channel != self.channel:
            return  # our buttons live in our channel only; anything else decides nothing
        for action in payload.get("actions") or ():
            if not isinstance(action, dict) or action.get("action_id") not in ("approve",
                                                                                "deny"):
                continue
            found = VALUE.match(str(action.get("value") or ""))
            if not found or action.get("block_id") != f"approval:{found.group(1)}":
                continue  # not one of our buttons: nothing to decide
            operator = self.operators.name_for_slack(user) if self.operators else None
            if operator is None or self.store is None:
                self._ephemeral(channel, user, NOT_OPERATOR)
                continue
            try:
                self.store.decide(found.group(1), decision=action["action_id"],
                                  digest=found.group(2), operator=operator)
            except approvals_mod.DecisionError as exc:
                self._ephemeral(channel, user, "Not taken: " + blocks.escape(str(exc)))

    def _ephemeral(self, channel, user, text):
        if isinstance(user, str) and user:
            self.poster.submit("chat.postEphemeral", dict(blocks.note(text), channel=channel,
                                                          user=user))
