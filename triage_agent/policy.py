"""The rules a tool call must pass before it runs: budgets, namespace scope, duplicates.

`check_call` applies them in DESIGN.md's order, one tool_use at a time:

    1 unknown tool -> 2 arguments fail the schema -> 3 scope not proven (scope.py)
      -> 4 duplicate (cached result) -> 5 tool budget spent -> run it

The first rule that refuses returns a `Decision` whose text is an instruction the model can act
on; `None` means the call may run, with the arguments rule 3 returns (it may fill in the one
allowed namespace, or an all-namespaces flag as false). The `Ledger` holds what the rules need
to remember during one run (executed calls, cached results, repeats). No I/O here: the loop
executes and records.
"""

import json
from dataclasses import dataclass, field

from triage_agent import schema, scope


@dataclass(frozen=True)
class Policy:
    """Budgets and scope for one run."""
    namespaces: tuple
    max_steps: int = 12
    max_tool_calls: int = 20
    max_repeats: int = 3
    max_cost_usd: float = None
    max_result_bytes: int = 32768          # each tool result, after redaction (context.py)
    context_budget_tokens: int = None      # None: the model's default; 0: never clear


@dataclass
class Decision:
    """A refused tool call: the audit decision, the text for the model, and if it is a violation."""
    decision: str
    text: str
    violation: bool = False


@dataclass
class Ledger:
    """What one run's rules remember: executed results, cache, repeats."""
    tool_calls: int = 0                              # executed server tool calls
    results: dict = field(default_factory=dict)      # tool_use_id -> result text (executed)
    cache: dict = field(default_factory=dict)        # call key -> result text
    calls: dict = field(default_factory=dict)        # tool_use_id -> (name, arguments) executed
    repeats: int = 0

    def forget(self, tool_use_id):
        """A cleared result: a later identical call runs again instead of being a duplicate."""
        name, arguments = self.calls.get(tool_use_id, (None, None))
        if name is not None:
            self.cache.pop(call_key(name, arguments), None)


def call_key(name, arguments):
    """Canonical identity of a call: tool name plus arguments as sorted compact JSON."""
    return name + " " + json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def unknown_tool(name, available):
    """Refusal for a tool name the model made up."""
    return Decision("unknown_tool", f"Unknown tool {name!r}. Available tools: "
                    f"{', '.join(available)}. Use one of these.", violation=True)


def schema_refusal(arguments, input_schema):
    """Refuse arguments that fail the tool's input schema, listing every field error."""
    if not isinstance(arguments, dict):
        return Decision("schema_error", "invalid arguments: expected a JSON object.")
    errors = schema.validate(arguments, input_schema)
    if errors:
        return Decision("schema_error", "invalid arguments: " + "; ".join(errors)
                        + ". Fix these and call again.")
    return None


def check_call(policy, ledger, name, entry, arguments, *, available):
    """Apply rules 1-5 to one call (1-2 only for propose_action): (Decision or None, the
    arguments to run, what rule 3 filled in)."""
    if entry is None:
        return unknown_tool(name, available), arguments, {}
    refusal = schema_refusal(arguments, entry["schema"])
    if refusal or entry["kind"] != "server":
        return refusal, arguments, {}  # a proposal's scope is checked, and recorded, by its gate
    proof = scope.check_scope(arguments, entry["scope"], policy.namespaces, tool=name)
    if proof.refusal:
        decision, text, violation = proof.refusal
        return Decision(decision, text, violation=violation), arguments, {}
    arguments = proof.arguments
    if proof.filled:  # what the loop filled in must still fit the tool's schema
        refusal = schema_refusal(arguments, entry["schema"])
        if refusal:
            return refusal, arguments, {}
    return _repeat_or_budget(policy, ledger, entry, arguments), arguments, proof.filled


def _repeat_or_budget(policy, ledger, entry, arguments):
    key = call_key(entry["name"], arguments)
    if key in ledger.cache:
        ledger.repeats += 1
        return Decision("duplicate", ledger.cache[key] + "\n\n[duplicate call: this is the "
                        "result you already have; it was not run again. Use a different call "
                        "or write_report.]")
    if ledger.tool_calls >= policy.max_tool_calls:
        return Decision("budget_spent", f"tool budget of {policy.max_tool_calls} calls is "
                        "spent; call write_report with what you have.")
    return None


def record_execution(ledger, entry, arguments, tool_use_id, text, is_error):
    """Remember an executed call for grounding, the budget and (if it worked) duplicates."""
    ledger.tool_calls += 1
    ledger.results[tool_use_id] = text
    ledger.calls[tool_use_id] = (entry["name"], arguments)
    if not is_error:  # a failed call may succeed when tried again
        ledger.cache[call_key(entry["name"], arguments)] = text


def repeats_exhausted(policy, ledger):
    """True once the model has repeated calls more than the policy allows."""
    return ledger.repeats >= policy.max_repeats


def budget_low(policy, ledger, step):
    """(tools_left, calls_left) when either is low enough to mention, else None."""
    tools_left = max(policy.max_tool_calls - ledger.tool_calls, 0)
    calls_left = max(policy.max_steps - step, 0)
    if tools_left <= 3 or calls_left <= 2:
        return tools_left, calls_left
    return None
