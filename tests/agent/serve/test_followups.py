"""serve's follow-up questions in-process: the engine's own queue and workers, a scripted `ask`
runner, an outcome file in a temp outbox. A question waits behind the alerts queued before it,
one follow-up of a run at a time, at most --max-followups; a revised report rewrites the
outcome file (the old report kept) and forwards it; a drain fails what never started."""

import json
import threading

import pytest

from tests.agent.serve.test_serve import ScriptedRunner, alert, wait_until_running
from tests.e2e.test_approvals import until
from triage_agent.serve import endpoints, followups, outcomes, runs

REPORT = {"summary": "revised", "severity": "high"}


class AskRunner:
    """Answers each question once `gate` opens; `revise` makes the answer change the report."""

    def __init__(self, *, revise=False, blocked=False, alerts=None):
        self.gate, self.revise, self.asked = threading.Event(), revise, []
        self.alerts, self.alerts_before = alerts, None   # alert runs started before it ran
        if not blocked:
            self.gate.set()

    def __call__(self, record, register):
        self.asked.append(record["question"])
        if self.alerts is not None:
            self.alerts_before = list(self.alerts.started)
        self.gate.wait(30)
        answer = {"answer": "because", "evidence": [], "report_changed": self.revise}
        if self.revise:
            answer["report"] = REPORT
        return 0, {"stop": "answer", "followup": len(self.asked), "answer": answer,
                   "cost_usd": 0.01, "grounding_warnings": []}, None


@pytest.fixture
def box(tmp_path):
    """start(ask_runner, alert_runner=None, **questions options) -> (engine, questions, run_id,
    forwarded docs)."""
    engines = []

    def start(ask_runner, alert_runner=None, **options):
        outbox = tmp_path / "outbox"
        engine = runs.Engine(runner=alert_runner or ScriptedRunner(), outbox=outbox,
                             workers=1).start()
        forwarded = []
        writer = outcomes.OutcomeWriter(outbox, write=runs.write_atomically,
                                        forward=forwarded.append)
        questions = followups.Questions(outbox, engine=engine, runner=ask_runner,
                                        revised=writer.revised, **options)
        run_id = runs.new_run_id()
        runs.write_atomically(outbox / f"{run_id}.json", {
            "run_id": run_id, "status": "done", "outcome": {"stop": "report",
                                                            "report": {"summary": "first"}}})
        (outbox / f"{run_id}.session.json").write_text("{}")
        engines.append((engine, ask_runner, alert_runner))
        return engine, questions, run_id, forwarded

    yield start
    for engine, ask_runner, alert_runner in engines:
        ask_runner.gate.set()
        if alert_runner:
            alert_runner.gate.set()
        engine.drain(5)


def state(questions, run_id, qid):
    return questions.get(run_id, qid)["state"]


def test_a_question_waits_behind_the_alerts_queued_before_it(box):
    alerts = ScriptedRunner(blocked=True)
    ask_runner = AskRunner(alerts=alerts)
    engine, questions, run_id, _ = box(ask_runner, alerts)
    running = engine.accept(alert("a1"))[1]
    wait_until_running(engine, running)              # on the one worker; a2 and the question wait
    engine.accept(alert("a2"))
    asked = questions.ask(run_id, "why?", "alice")
    assert asked["state"] == "queued" and engine.gauges()["queue_depth"] == 2
    alerts.gate.set()
    assert engine.wait_idle(10)
    assert len(ask_runner.alerts_before) == 2    # both alerts ran first, on the one worker
    record = questions.get(run_id, asked["id"])
    assert record["state"] == "answered" and record["answer"] == "because"
    assert record["followup"] == 1 and record["asked_by"] == "alice"
    assert questions.counts == {"queued": 1, "running": 1, "answered": 1, "failed": 0}
    text = endpoints.metrics_text(engine, questions=questions)
    assert 'triage_followups_total{state="answered"} 1' in text


def test_one_follow_up_of_a_run_at_a_time_and_at_most_max_followups(box):
    ask_runner = AskRunner(blocked=True)
    engine, questions, run_id, _ = box(ask_runner, max_followups=2)
    first = questions.ask(run_id, "one?", "alice")
    with pytest.raises(followups.QuestionError) as busy:
        questions.ask(run_id, "two?", "bob")
    assert busy.value.status == 409 and first["id"] in str(busy.value)
    ask_runner.gate.set()
    assert engine.wait_idle(10)
    questions.ask(run_id, "two?", "bob")
    assert engine.wait_idle(10)
    with pytest.raises(followups.QuestionError) as spent:
        questions.ask(run_id, "three?", "bob")
    assert spent.value.status == 409 and "--max-followups 2" in str(spent.value)
    assert ask_runner.asked == ["one?", "two?"]


@pytest.mark.parametrize("question, status", [("", 400), (None, 400), ("x" * 2001, 400)])
def test_a_question_that_cannot_be_asked(box, question, status):
    _, questions, run_id, _ = box(AskRunner())
    with pytest.raises(followups.QuestionError) as refused:
        questions.ask(run_id, question, "alice")
    assert refused.value.status == status and questions.list(run_id) == []


def test_unknown_run_and_a_run_without_session(box):
    _, questions, run_id, _ = box(AskRunner())
    with pytest.raises(followups.QuestionError) as unknown:
        questions.ask(runs.new_run_id(), "why?", "alice")
    assert unknown.value.status == 404
    (questions.outbox / f"{run_id}.session.json").unlink()
    with pytest.raises(followups.QuestionError) as no_session:
        questions.ask(run_id, "why?", "alice")
    assert no_session.value.status == 409


def test_a_revised_report_rewrites_the_outcome_and_is_forwarded(box):
    engine, questions, run_id, forwarded = box(AskRunner(revise=True))
    asked = questions.ask(run_id, "both replicas?", "alice")
    assert engine.wait_idle(10)
    doc = json.loads((questions.outbox / f"{run_id}.json").read_text())
    assert doc["outcome"]["report"] == REPORT
    [old] = doc["outcome"]["report_history"]
    assert old["report"] == {"summary": "first"} and old["question_id"] == asked["id"]
    assert forwarded == [doc]
    assert questions.get(run_id, asked["id"])["report_changed"] is True


def test_a_drain_fails_a_question_that_never_started(box):
    alerts = ScriptedRunner(blocked=True)
    engine, questions, run_id, _ = box(AskRunner(), alerts)
    engine.accept(alert("a1"))
    asked = questions.ask(run_id, "why?", "alice")
    drainer = threading.Thread(target=engine.drain, args=(5,))
    drainer.start()
    assert until(lambda: state(questions, run_id, asked["id"]) == "failed")
    alerts.gate.set()                                 # the running alert may finish now
    drainer.join()
    assert "stopped before" in questions.get(run_id, asked["id"])["error"]


def test_ask_children_get_model_options_never_budgets_or_the_run_s_replay():
    run_args = ["--model", "m", "--replay", "f.json", "--max-steps", "3", "--no-stream",
                "--base-url=http://x", "--allow-action", "rollout_undo", "--effort", "high"]
    assert followups.ask_args(run_args) == ["--model", "m", "--no-stream",
                                            "--base-url=http://x", "--effort", "high"]
