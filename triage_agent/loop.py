"""run_triage(): the agent loop, its stop reasons, and the one place a run becomes an Outcome.

    first user turn (symptom, scope, budgets)
    for step in 1..max_steps:
        response = model(turns.build_request(...))     # unusable -> api_error
        store the turn as turns.repair_content leaves it  # thinking blocks unchanged; only what
                                                          # the API would reject is changed
        tool_use    -> dispatch each call (policy.py's rules), all results in ONE user turn
        max_tokens  -> nothing in that turn runs; each call gets an error result; once only
        end_turn    -> one nudge to call write_report, then stop
        refusal / model_context_window_exceeded -> stop;  pause_turn -> send again
        a valid, grounded write_report ends the run after its round (a follow-up: answer)

Every way a run can end (a stop reason, a budget, ApiError, McpError, a seam raising RunEnded,
KeyboardInterrupt) is turned into an `Outcome` in `run_triage` and nowhere else. The seams it
calls (model, tools, gate, recorder) are declared in seams.py.
Every tool result is redacted (mcp_kubectl_server.redact) before the ledger, the audit, the trace
or the model sees it, whichever server produced it. The wire side of a turn (request body,
response checks and repairs, tool_result blocks, spend) is turns.py.
"""

import time

from mcp_kubectl_server.redact import redact
from triage_agent import policy as rules
from triage_agent import actions, context, prompts, report, terminal, turns
from triage_agent.actions import looks
from triage_agent.telemetry import records
from triage_agent.lines import describe_call, first_line, report_digest
from triage_agent.mcp.client import McpError
from triage_agent.model.errors import ApiError
from triage_agent.outcome import Outcome
from triage_agent.seams import RunEnded
from triage_agent.turns import Settings
from triage_agent.verify import outcome as verify

FINAL_STOP = {True: "max_repeats", False: "max_steps"}
VIOLATING_PROPOSALS = ("invalid", "refused", "repeat_denied", "denied")


class _Run:
    """One run's state; methods are the loop's steps. Raises RunEnded to stop."""

    def __init__(self, symptom, *, model, tools, policy, settings, toolset, gate, recorder,
                 progress, resume=None, ending=None):
        self.model, self.tools, self.policy, self.settings = model, tools, policy, settings
        self.toolset, self.gate, self.recorder = toolset, gate, recorder
        self.progress = progress or (lambda line: None)
        self.ledger, self.symptom, self.entries = rules.Ledger(), symptom, []  # entries: audit
        self.outcome = Outcome(model=settings.model)
        self.ending = ending or report.ReportEnding()
        # every tool_use id in the conversation (turns.repair_content); a follow-up's `resume`
        # gives the stored conversation and fills the ledger with the results it may cite
        self.used_ids = set(resume.used_ids) if resume else set()
        self.messages = resume.begin(self.ledger) if resume else [{"role": "user", "content": [
            {"type": "text", "text": prompts.first_turn(symptom, policy.namespaces, policy)}]}]
        self.final = False          # set when repeats are spent: the next call is the last
        self.nudged = self.cut_off = False
        self.pushed = set()         # the one-time push-backs used: "zero", "grounding"
        self.last_decision = None
        self.spend = turns.Spend(settings.prices)
        budget = policy.context_budget_tokens
        self.keeper = context.Keeper(max_result_bytes=policy.max_result_bytes, budget_tokens=(
            context.default_budget(settings.model) if budget is None else budget))

    def run(self):
        for step in range(1, self.policy.max_steps + 1):
            last = step == self.policy.max_steps or self.final
            stop_reason, content, uses = self.call_model(step, last)
            self.store(content)
            self.handle(stop_reason, uses, step, last)
            if self.ending.done(self.outcome):
                raise RunEnded(self.ending.stop)
            if last:
                raise RunEnded(FINAL_STOP[self.final])
        raise RunEnded("max_steps")

    def store(self, content):
        """The assistant turn as repaired; a paused turn is continued; an empty one is not kept."""
        if not content:
            return
        if self.messages[-1]["role"] == "assistant":   # continuing a paused turn
            self.messages[-1] = {"role": "assistant",
                                 "content": self.messages[-1]["content"] + content}
        else:
            self.messages.append({"role": "assistant", "content": content})

    def tell(self, blocks):
        """Say `blocks` in a user turn; after a turn that was not stored, the last one is the
        user's, and the API wants the roles to alternate."""
        if self.messages[-1]["role"] == "user":
            self.messages[-1] = {"role": "user", "content": self.messages[-1]["content"] + blocks}
        else:
            self.messages.append({"role": "user", "content": blocks})

    def handle(self, stop_reason, uses, step, last):
        if stop_reason in ("refusal", "model_context_window_exceeded"):
            raise RunEnded(stop_reason)
        if stop_reason == "max_tokens":
            return self.truncated(uses, step)
        if uses:
            return self.round(uses, step, last)
        if stop_reason == "pause_turn":
            return None   # send the paused turn back as it is; the model continues it
        if self.nudged and not last:
            raise RunEnded("end_turn")
        self.nudged = True
        self.tell([{"type": "text", "text": self.ending.nudge}])
        return None

    def call_model(self, step, last):
        self.check_cost()
        self.outcome.steps = step
        if last:
            self.say_last_call()
        request = self.prepare_request(step)
        started = time.time()
        try:
            response = self.model(request)
        except ApiError as exc:
            raise self.failed(step, request, started, exc, turns.api_error_text(exc)) from exc
        except (RunEnded, KeyboardInterrupt):
            raise
        except Exception as exc:  # a broken model seam ends the run, never the process
            raise self.failed(step, request, started, exc,
                              f"model call failed ({type(exc).__name__}): {exc}") from exc
        if not turns.well_formed(response):
            why = f"malformed model response: {response!r:.200}"
            raise self.failed(step, request, started, ValueError(why), why)
        unusable = turns.usage_problem(response)
        if unusable:
            why = (f"the model API's response cannot be accounted for: {unusable}; the run stops "
                   "rather than spend what it cannot count")
            raise self.failed(step, request, started, ValueError(why), why, response=response)
        response, inferred = turns.fill_stop_reason(response)
        content, uses, notes = turns.repair_content(response["content"], self.used_ids, step=step)
        notes += [inferred] if inferred else []
        if response.get("stop_reason") == "pause_turn" and not uses:  # sent back as the final turn
            content, note = turns.trim_final(content)
            notes += [note] if note else []
        self.account(request, dict(response, content=content), step, started, notes)
        unknown = turns.unknown_stop_reason(response)
        if unknown:
            raise RunEnded("api_error", unknown)
        return response.get("stop_reason"), content, uses

    def failed(self, step, request, started, error, why, *, response=None):
        """A model call that cannot be used: its span, and the RunEnded to raise."""
        self.trace(records.model_call_span(step=step, request=request, response=response,
                                           started=started, ended=time.time(), error=error))
        return RunEnded("api_error", why)

    def prepare_request(self, step):
        """The request for this step, old results cleared first when it would pass the budget."""
        def build():
            return turns.build_request(self.settings, self.toolset, self.messages,
                                       anchors=self.keeper.anchors)

        def describe(use_id):
            return describe_call(*self.ledger.calls[use_id])

        request, clearing = self.keeper.prepare(build, self.messages, describe=describe,
                                                clearable_ids=set(self.ledger.calls))
        if clearing and clearing.results:
            for use_id in clearing.tool_use_ids:
                self.ledger.forget(use_id)
            figures = {"results": clearing.results, "bytes": clearing.bytes,
                       "tokens_before": clearing.tokens_before, "tokens_after": clearing.tokens_after,
                       "budget_tokens": self.keeper.budget.tokens}
            self.record(step=step, tool="context", decision="context_cleared",
                        tool_use_ids=list(clearing.tool_use_ids), **figures)
            self.trace({"event": "context_cleared", "step": step, **figures})
            self.say(f"[step {step}/{self.policy.max_steps}] cleared {clearing.results} old tool "
                     f"results ({clearing.bytes:,} bytes) to stay within "
                     f"{self.keeper.budget.tokens:,} tokens")
        return request

    def account(self, request, response, step, started, repairs):
        self.spend.add(response, self.settings.model)
        self.keeper.counted(self.spend.last_input)
        usage = self.spend.usage
        self.outcome.usage, self.outcome.cost_usd = usage.as_dict(), usage.cost
        self.outcome.usage_by_step.append(dict(step=step, **turns.step_usage(response)))
        span = records.model_call_span(step=step, request=request, response=response,
                                       started=started, ended=time.time())
        if repairs:  # the span's output is the turn as stored and sent back; these say what changed
            span["attributes"]["triage_agent.repairs"] = list(repairs)
        self.trace(span)

    def check_cost(self):
        why = self.spend.over_limit(self.policy.max_cost_usd, self.settings.model)
        if why:
            raise RunEnded("max_cost", why)

    def say_last_call(self):
        # after a paused turn the newest message is the assistant's; the user turn before it
        newest = next(m for m in reversed(self.messages) if m["role"] == "user")
        block = {"type": "text", "text": self.ending.last_call}
        if block not in newest["content"]:
            newest["content"].append(block)

    def truncated(self, uses, step):
        if self.cut_off:
            raise RunEnded("max_tokens")
        self.cut_off = True
        for use in uses:
            self.audit(step, use, "cut_off", True, prompts.CUT_OFF_RESULT)
        content = [turns.tool_result(u["id"], prompts.CUT_OFF_RESULT, True) for u in uses]
        self.tell(content or [{"type": "text", "text": prompts.CUT_OFF_TEXT}])

    def round(self, uses, step, last):
        results = [turns.tool_result(u["id"], *self.dispatch(u, step, last)) for u in uses]
        low = rules.budget_low(self.policy, self.ledger, step)
        if low:
            results[-1]["content"].append({"type": "text", "text": prompts.budget_note(*low)})
        self.messages.append({"role": "user", "content": results})

    def dispatch(self, use, step, last):
        """One tool_use -> (text, is_error), in policy order; never raises but RunEnded."""
        entry = self.toolset.by_api_name.get(use["name"])
        name, arguments = (entry["name"] if entry else use["name"]), use.get("input")
        self.say(f"[step {step}/{self.policy.max_steps}] {describe_call(name, arguments)}")
        if entry and entry["kind"] in report.ENDING_KINDS:
            return self.traced(use, step, lambda: self.finish(use, entry, arguments, step, last))
        if last and entry:
            return self.refuse(step, use, rules.Decision("not_run_last", self.ending.not_run_last))
        decision, arguments, filled = rules.check_call(
            self.policy, self.ledger, name, entry, arguments,
            available=sorted(self.toolset.by_api_name))
        if decision:
            if decision.decision == "duplicate" and rules.repeats_exhausted(self.policy,
                                                                            self.ledger):
                self.final = True
            return self.refuse(step, use, decision)
        if entry["kind"] == "propose":
            return self.traced(use, step, lambda: self.propose(use, arguments, step))
        return self.execute(use, entry, arguments, step, filled)

    def traced(self, use, step, run):
        """Run one of the loop's own tools (propose_action, write_report) inside its span."""
        started = time.time()
        text, is_error = run()
        self.trace(records.tool_span(step=step, name=use["name"], call_id=use["id"],
                                     arguments=use.get("input"), text=text, is_error=is_error,
                                     started=started, ended=time.time(), via_mcp=False,
                                     decision=self.last_decision))
        return text, is_error

    def refuse(self, step, use, decision):
        is_error = decision.decision != "duplicate"
        self.audit(step, use, decision.decision, is_error, decision.text)
        if decision.violation:
            self.violation(step, use, decision.decision)
        return decision.text, is_error

    def violation(self, step, use, decision):
        self.outcome.violations.append({"step": step, "tool": use["name"],
                                        "arguments": use.get("input"), "decision": decision})

    def execute(self, use, entry, arguments, step, filled):
        """Run a proven call (`arguments` include what the loop `filled` in)."""
        started = time.time()
        try:
            text, is_error = self.tools.call(entry["name"], arguments)
        except McpError as exc:  # its message carries the server's stderr tail
            self.audit(step, use, "mcp_error", True, str(exc))
            raise RunEnded("mcp_error", redact(f"MCP server failed: {exc}")) from exc
        except Exception as exc:  # a tool failure is a value the model sees
            text, is_error = f"tool call failed ({type(exc).__name__}): {exc}", True
        # whatever the server: nothing it returns reaches the ledger, audit, trace or model
        # before it is redacted (ours redacts too; a third-party server may not)
        text = redact(text if isinstance(text, str) else str(text))
        capped = self.keeper.result(text, tool=entry["name"], step=step,
                                    input_schema=entry.get("schema"))
        text, extra = capped.text, {"filled": filled} if filled else {}
        if capped.cut:  # the audit keeps the size the tool returned, and what the model saw
            extra.update(bytes=capped.full_bytes, shown_bytes=len(text.encode("utf-8")))
        rules.record_execution(self.ledger, entry, arguments, use["id"], text, is_error)
        self.audit(step, use, "executed", is_error, text, **extra)
        self.trace(records.tool_span(step=step, name=entry["name"], call_id=use["id"],
                                     arguments=arguments, text=text, is_error=is_error,
                                     started=started, ended=time.time(), decision="executed"))
        return text, is_error

    def propose(self, use, arguments, step):
        if self.gate is None:
            return self.refuse(step, use, rules.Decision(
                "proposal_refused", "propose_action is not enabled in this run; list the "
                "action in the report's proposed_actions instead.", violation=True))
        try:
            text, is_error, proposal = self.gate.propose(arguments, seen=looks.seen_before(
                self.ledger.calls, self.ledger.results, arguments))
        except KeyboardInterrupt:   # during the watch of an action that ran: keep its record
            ran = (getattr(self.gate, "proposals", None) or [None])[-1]
            if ran is not None and ran.decision == "executed":
                self.took(use, step, ran, redact(actions.model_text(ran)), False)
            raise
        return self.took(use, step, proposal, redact(text), is_error)  # text may quote kubectl

    def took(self, use, step, proposal, text, is_error):
        """Record what became of one proposal (and of the watch after it, if there was one)."""
        decision = proposal.decision
        self.outcome.proposals.append(dict(proposal.to_dict(), step=step, tool_use_id=use["id"]))
        self.audit(step, use, f"proposal_{decision}", is_error, text)
        if decision in VIOLATING_PROPOSALS:
            self.violation(step, use, f"proposal_{decision}")
        if isinstance(proposal.verification, dict):
            self.record(step=step, tool=use["name"], tool_use_id=use["id"],
                        decision="verification", **{k: proposal.verification.get(k) for k in (
                            "state", "observed", "checked_at", "waited_s")})
        return text, is_error

    def finish(self, use, entry, arguments, step, last):
        """write_report, or a follow-up's answer: checked, grounded, pushed back at most once."""
        decision, text, push = report.judge(
            self.ending, entry["kind"], arguments, self.outcome, dict(self.ledger.results),
            tool_calls=self.ledger.tool_calls, pushed=self.pushed, last=last)
        self.pushed |= {push} if push else set()
        accepted = decision.endswith("_accepted")
        if accepted:
            self.ending.accept(self.outcome, arguments, text)
            text = f"{self.ending.kind} accepted."
        self.audit(step, use, decision, not accepted, "" if accepted else text)
        return text, not accepted

    def say(self, line):
        try:
            self.progress(line)
        except Exception:  # like the record sinks: a progress line that cannot be shown is lost
            pass

    def trace(self, span):
        try:
            self.recorder.trace(span)
        except Exception:  # like the audit sink: a failing trace sink must not end the run
            pass

    def audit(self, step, use, decision, is_error, text, **extra):
        self.last_decision = decision   # the span of the same call carries it too
        entry = self.toolset.by_api_name.get(use["name"])
        arguments = use.get("input")
        if entry and entry["kind"] in report.ENDING_KINDS and isinstance(arguments, dict):
            arguments = report_digest(arguments)
        if use.get("repaired"):
            extra["repaired"] = use["repaired"]
        if is_error and decision in ("executed", "mcp_error"):  # the cause, not only its size
            extra.setdefault("error", first_line(redact(text)))  # (an McpError is not yet)
        extra.setdefault("bytes", len(text.encode("utf-8", "replace")))
        self.record(step=step, tool=entry["name"] if entry else use["name"],
                    tool_use_id=use["id"], arguments=arguments, decision=decision,
                    is_error=bool(is_error), **extra)

    def record(self, **fields):
        self.entries.append(fields)
        try:
            self.recorder.audit(**fields)
        except Exception:  # an audit sink failing must not end the run; the trace keeps going
            pass

    def list_not_offered(self):
        """The server tools the model is not offered, with why: in the outcome and the audit."""
        self.outcome.not_offered = list(self.toolset.not_offered)
        for left_out in self.toolset.not_offered:
            self.record(step=0, tool=left_out["tool"], decision="not_offered",
                        reason=left_out["reason"])


def run_triage(symptom, *, model, tools, policy, settings=None, toolset=None, gate=None,
               recorder=None, progress=None, review=False, resume=None, ending=None,
               transcript=None):
    """Run one triage and return its Outcome; never raises (KeyboardInterrupt included). An
    accepted report is then checked (verify/): claims, blind spots and, with `review`, the
    second reading, which is not a step and whose failure never loses the report. A follow-up
    passes `resume` and `ending` (followup/ask.py); `transcript` (a dict) receives the
    conversation and the ledger as the run leaves them."""
    settings = settings or Settings()
    toolset = toolset or prompts.build_toolset(tools.list())
    run = _Run(symptom, model=model, tools=tools, policy=policy, settings=settings,
               toolset=toolset, gate=gate, recorder=recorder or records.Recorder(quiet=True),
               progress=progress, resume=resume, ending=ending)
    try:
        run.list_not_offered()
        run.run()
    except RunEnded as ended:
        run.outcome.stop, run.outcome.error = ended.stop, ended.error
    except KeyboardInterrupt as exc:  # ^C, or SIGTERM / SIGHUP through terminal.StopSignals
        run.outcome.stop, run.outcome.error = "interrupted", terminal.reason(exc)
    if run.outcome.answer is not None:
        run.outcome.verification = verify.check_answer(run)
    elif run.outcome.report is not None:
        run.outcome.verification = verify.check_run(run, reviewing=review)
    run.outcome.tool_calls = run.ledger.tool_calls
    run.outcome.context = run.keeper.stats(run.outcome.usage)
    if transcript is not None:
        transcript.update(messages=run.messages, results=dict(run.ledger.results),
                          calls=dict(run.ledger.calls), used_ids=set(run.used_ids))
    return run.outcome
