"""The rules a tool call must pass before it runs: budgets, namespace scope, duplicates.

`check_call` applies them in DESIGN.md's order, one tool_use at a time:

    1 unknown tool -> 2 arguments fail the schema -> 3 namespace out of scope
      -> 4 duplicate (cached result) -> 5 tool budget spent -> run it

The first rule that refuses returns a `Decision` whose text is an instruction the model can act
on; `None` means the call may run. The `Ledger` holds what the rules need to remember during one
run (executed calls, cached results, repeats). No I/O here: the loop executes and records.
"""

import json
from dataclasses import dataclass, field

from triage_agent import schema

ALL_NAMESPACES_KEYS = {"allnamespaces", "a", "clusterwide", "cluster"}


@dataclass(frozen=True)
class Policy:
    """Budgets and scope for one run."""
    namespaces: tuple
    max_steps: int = 12
    max_tool_calls: int = 20
    max_repeats: int = 3
    max_cost_usd: float = None


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
    repeats: int = 0


def call_key(name, arguments):
    """Canonical identity of a call: tool name plus arguments as sorted compact JSON."""
    return name + " " + json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def _namespace_values(arguments):
    """Every namespace-like argument value, and whether an all-namespaces flag is set."""
    values, all_ns = [], False
    for key, value in arguments.items():
        norm = key.lower().replace("-", "").replace("_", "")
        if norm in ("namespace", "namespaces", "ns"):
            values.extend(value if isinstance(value, list) else [value])
        elif norm in ALL_NAMESPACES_KEYS and value not in (False, None, "", 0, "false"):
            all_ns = True
    return values, all_ns


def scope_refusal(arguments, namespaces):
    """Refuse a call naming a namespace outside the allow-list, or all of them."""
    values, all_ns = _namespace_values(arguments)
    allowed = ", ".join(namespaces)
    if all_ns:
        return Decision("out_of_scope", "refused: calls across all namespaces are not allowed. "
                        f"Namespaces in scope: {allowed}. Name one of them.", violation=True)
    for value in values:
        if value not in namespaces:
            return Decision("out_of_scope", f"refused: namespace {value!r} is out of scope for "
                            f"this run. Namespaces in scope: {allowed}. Do not ask again; "
                            "report it if you think it matters.", violation=True)
    return None


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
    """Apply rules 1-5 to one call (1-2 only for propose_action); None: it may run."""
    if entry is None:
        return unknown_tool(name, available)
    refusal = schema_refusal(arguments, entry["schema"])
    if refusal or entry["kind"] != "server":
        return refusal  # a proposal's scope is checked, and recorded, by its gate
    refusal = scope_refusal(arguments, policy.namespaces)
    if refusal:
        return refusal
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
