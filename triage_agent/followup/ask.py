"""One follow-up question asked of a session: the plain function every front end calls (the
`ask` command, --interactive, serve's worker, a chat front end).

    ask_followup(session, question, model=, tools=, toolset=, policy=, settings=, gate=, ...)
        -> Outcome (stop "answer" with outcome.answer, or why it ended without one)

The stored conversation goes on as the model last saw it: the user turn after the model's last
turn carries the tool_result of every call that turn made first (write_report's "report
accepted." among them; a call that never got one is answered "not run"), then the question.
The loop is the ordinary one (loop.run_triage) with the same dispatch rules, scope and gates, a
fresh budget, context management, and AnswerEnding instead of write_report. The earlier results
stay citable (the ledger is filled with them) but are not a duplicate-call cache: a follow-up
may read the current state again. The session is updated in place: the conversation as the
follow-up left it, a revised report (the old one into the history), the follow-up's figures.
"""

import copy

from triage_agent import loop, turns
from triage_agent.followup import answer as answers
from triage_agent.followup import session as sessions
from triage_agent.policy import Policy

NOT_RUN = "not run: the run ended before this call could run."
ASK_MAX_STEPS, ASK_MAX_TOOL_CALLS = 6, 10


class AskError(Exception):
    """A question that cannot be asked (empty, or too long)."""


MAX_QUESTION_CHARS = 2000


class Resume:
    """What the loop starts a follow-up from: the messages, and the results they may cite."""

    def __init__(self, messages, results, calls):
        self.messages, self.results, self.calls = messages, results, calls
        self.used_ids = {block.get("id") for message in messages
                         for block in message["content"] if block.get("type") == "tool_use"}

    def begin(self, ledger):
        ledger.results.update(self.results)
        ledger.calls.update({k: tuple(v) for k, v in self.calls.items()})
        return self.messages


def check_question(question) -> str:
    """The question, stripped; AskError when it is empty or longer than 2,000 characters."""
    if not isinstance(question, str) or not question.strip():
        raise AskError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise AskError(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    return question.strip()


def continued(messages, text):
    """The stored conversation with the question asked after it (a copy): unanswered tool_use
    blocks of the last assistant turn are answered first, and the question goes last."""
    messages = copy.deepcopy(messages)
    question = {"type": "text", "text": text}
    last = messages[-1]
    if last["role"] == "assistant":
        answered = [turns.tool_result(b["id"], NOT_RUN, True) for b in last["content"]
                    if b.get("type") == "tool_use"]
        messages.append({"role": "user", "content": answered + [question]})
    else:  # the loop already answered the last turn's calls (write_report's among them)
        messages[-1] = {"role": "user", "content": list(last["content"]) + [question]}
    return messages


def followup_policy(session, *, namespaces=None, max_steps=ASK_MAX_STEPS,
                    max_tool_calls=ASK_MAX_TOOL_CALLS, max_cost_usd=None):
    """The follow-up's Policy: the session's scope (`namespaces` may only narrow it) and its
    limits, with fresh budgets. ValueError names a namespace outside the session's scope."""
    stored = session["policy"]
    scope = tuple(stored["namespaces"])
    if namespaces:
        wider = [n for n in namespaces if n not in scope]
        if wider:
            raise ValueError(f"{', '.join(map(repr, wider))} is not in the session's scope "
                             f"({', '.join(scope)}): a follow-up can only narrow it")
        scope = tuple(namespaces)
    return Policy(namespaces=scope, max_steps=max_steps, max_tool_calls=max_tool_calls,
                  max_repeats=stored.get("max_repeats") or 3, max_cost_usd=max_cost_usd,
                  max_result_bytes=stored.get("max_result_bytes") or 0,
                  context_budget_tokens=stored.get("context_budget_tokens"))


class Numbered:
    """A recorder whose audit entries and spans carry the follow-up's number."""

    def __init__(self, recorder, number):
        self.recorder, self.number = recorder, number

    def audit(self, **fields):
        return self.recorder.audit(**fields, followup=self.number)

    def trace(self, draft):
        if isinstance(draft, dict) and isinstance(draft.get("attributes"), dict):
            draft["attributes"]["triage_agent.followup"] = self.number
        elif isinstance(draft, dict):
            draft = dict(draft, followup=self.number)
        return self.recorder.trace(draft)

    def __getattr__(self, name):
        return getattr(self.recorder, name)


def next_number(session) -> int:
    """The number the next follow-up of this session gets (the run itself is 0)."""
    return len(session["runs"])


def ask_followup(session, question, *, model, tools, toolset, policy, settings, gate=None,
                 recorder=None, progress=None):
    """Ask `question` of `session` (updated in place); returns the follow-up's Outcome."""
    question = check_question(question)
    number = next_number(session)
    conversation = session["conversation"]
    text = answers.question_turn(question, number=number, policy=policy)
    resume = Resume(continued(conversation["messages"], text), conversation["results"],
                    conversation["calls"])
    transcript = {}
    outcome = loop.run_triage(question, model=model, tools=tools, policy=policy,
                              settings=settings, toolset=answers.add_answer_tool(toolset),
                              gate=gate, recorder=Numbered(recorder, number) if recorder else None,
                              progress=progress, resume=resume, ending=answers.AnswerEnding(),
                              transcript=transcript)
    outcome.followup = number
    outcome.trace_id = getattr(recorder, "trace_id", None)
    if outcome.answer and outcome.answer.get("report_changed"):
        sessions.replace_report(session, outcome.answer["report"], followup=number)
    sessions.record_turn(session, outcome, transcript, number=number, question=question)
    return outcome
