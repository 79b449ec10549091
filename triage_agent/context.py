"""What the conversation may hold: a cap on every tool result, and clearing of old results
before a request outgrows its token budget. Works the same whatever server answered.

    tool result ── redact ── cap_result(text, limit) ──> what the model, ledger and trace see
                                  (cut at a line boundary, with a note on how to narrow the call)

    before each model call:
        tokens = Budget.estimate(request bytes)       # bytes per token, calibrated by usage
        over the budget -> clear_results(messages)    # oldest results first, in one batch,
                                                      # down to CLEAR_TO of the budget

A cleared result keeps its tool_result block (every tool_use stays answered, so the API accepts
the conversation); only its text becomes a stub naming the call. The results of the last
KEEP_ROUNDS rounds and of write_report are never cleared. Clearing in one batch matters for
the prompt cache: everything after the first cleared block is written to the cache again, so
clearing a little on every step would rewrite the rest of the conversation every time.

Where the request's breakpoints go (`mark_breakpoints`; the system block carries the first, so
tools and system are one cached prefix). The API finds an earlier cache entry only by looking
back from a breakpoint about 20 blocks, so each entry a later request should read ends at a
breakpoint of its own, wherever the blocks after it are:

    [tools, system]bp ... [turn of the last cleared result]bp ... [previous user turn]bp [newest]bp
                           the clearing after it starts here:     what the last       read by
                           its request reads up to this turn      request wrote       the next

The previous user turn is the last request's newest: read whole however many blocks the newest
turn added (a wide turn of parallel calls adds more than 20). The request that clears marks the
turn where the clearing before it stopped (read: the prefix before it is unchanged) and the one
where it stops itself (written, for the next clearing), in place of the previous user turn,
whose prefix has just changed.
"""

import json
from dataclasses import dataclass

DEFAULT_MAX_RESULT_BYTES = 32768
CLEAR_TO = 0.5           # a clearing frees the conversation down to this share of the budget
KEEP_ROUNDS = 2          # the newest rounds of tool results are never cleared
FIRST_BYTES_PER_TOKEN = 3.0   # before any usage is known: low, so the estimate errs high
# what calibration may conclude: tokenizers give about 2.5 to 4.5 bytes a token on JSON and
# prose; a count outside this (a replay fixture's token counts, a server that counts nothing)
# says more about the count than about the request
BYTES_PER_TOKEN_RANGE = (2.0, 5.0)
# (model family prefix, context window in tokens); the default budget is a share of it
CONTEXT_WINDOWS = (("claude-", 200_000),)
BUDGET_SHARE = 0.4
UNKNOWN_MODEL_BUDGET = 16_000  # a model the table does not know may have a small window
CLEARED = "[result cleared from the conversation to stay within its token budget: "


def default_budget(model):
    """The --context-budget-tokens default for `model` (Bedrock and Vertex ids too): a share
    of its context window."""
    from triage_agent.telemetry.prices import table_id
    model = table_id(model) if isinstance(model, str) else model
    for prefix, window in CONTEXT_WINDOWS:
        if isinstance(model, str) and model.startswith(prefix):
            return int(window * BUDGET_SHARE)
    return UNKNOWN_MODEL_BUDGET


@dataclass
class Capped:
    """A tool result as the model is shown it, and the size of what the tool returned."""
    text: str
    full_bytes: int
    cut: bool


def cap_result(text, limit, *, hint="narrow the call"):
    """Cut `text` to at most `limit` UTF-8 bytes at a line boundary (inside one line that is
    longer than the limit: at a character boundary), and say how much was left out."""
    data = text.encode("utf-8", "replace")
    if not limit or len(data) <= limit:   # 0 or None: no cap
        return Capped(text, len(data), False)
    head = data[:limit]
    newline = head.rfind(b"\n")
    if newline > 0:
        head = head[:newline]
    kept = head.decode("utf-8", "ignore")   # a character cut in half is dropped, not mangled
    left = len(data) - len(kept.encode("utf-8"))
    lines_left = text.count("\n") - kept.count("\n")
    note = (f"\n[result cut: {left:,} of {len(data):,} bytes ({lines_left:,} more lines) were "
            f"left out, over the {limit:,}-byte limit for one result. To see the rest, {hint}.]")
    return Capped(kept + note, len(data), True)


class Budget:
    """The token estimate of a request, calibrated by what the API counted for the last one."""

    def __init__(self, tokens):
        self.tokens = tokens          # 0 or None: no clearing
        self.bytes_per_token = FIRST_BYTES_PER_TOKEN
        self.last_request_bytes = 0

    def estimate(self, request_bytes):
        return int(request_bytes / self.bytes_per_token) + 1

    def sent(self, request_bytes):
        self.last_request_bytes = request_bytes

    def counted(self, input_tokens):
        """The API's input count (fresh + cache) for the request sent last."""
        if input_tokens and self.last_request_bytes:
            low, high = BYTES_PER_TOKEN_RANGE
            self.bytes_per_token = min(max(self.last_request_bytes / input_tokens, low), high)

    def over(self, request_bytes):
        return bool(self.tokens) and self.estimate(request_bytes) > self.tokens


def request_bytes(request):
    return len(json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@dataclass
class Clearing:
    """One batch of cleared results."""
    results: int = 0
    bytes: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    tool_use_ids: tuple = ()


def clearable(messages, ids):
    """(message index, block index, tool_use_id, text) of every result that may be cleared,
    oldest first: one of `ids` (executed server tools: never write_report's or propose_action's),
    not in the newest KEEP_ROUNDS rounds, not cleared yet."""
    rounds = [i for i, m in enumerate(messages) if m["role"] == "user"
              and any(b.get("type") == "tool_result" for b in m["content"])]
    found = []
    for i in rounds[:-KEEP_ROUNDS] if len(rounds) > KEEP_ROUNDS else []:
        for j, block in enumerate(messages[i]["content"]):
            if block.get("type") != "tool_result" or block.get("tool_use_id") not in ids:
                continue
            text = "".join(part.get("text", "") for part in block.get("content") or [])
            if not text.startswith(CLEARED):
                found.append((i, j, block["tool_use_id"], text))
    return found


def clear_results(messages, *, measure, target, ids, describe):
    """Clear the oldest results in place until `measure()` (the request's token estimate) is at
    most `target` or nothing is left to clear; returns the Clearing (results 0: none)."""
    clearing = Clearing(tokens_before=measure())
    cleared = []
    for i, j, use_id, text in clearable(messages, ids):
        if clearing.tokens_after and clearing.tokens_after <= target:
            break
        stub = (f"{CLEARED}{describe(use_id)} returned {len(text.encode('utf-8')):,} bytes. "
                "Call it again if you still need it.]")
        content = list(messages[i]["content"])
        content[j] = dict(content[j], content=[{"type": "text", "text": stub}])
        messages[i] = dict(messages[i], content=content)
        clearing.bytes += len(text.encode("utf-8")) - len(stub.encode("utf-8"))
        cleared.append(use_id)
        clearing.tokens_after = measure()
    clearing.results, clearing.tool_use_ids = len(cleared), tuple(cleared)
    clearing.tokens_after = clearing.tokens_after or clearing.tokens_before
    return clearing


MARK = {"type": "ephemeral"}


def mark_breakpoints(messages, anchors=()):
    """A copy of `messages` with cache_control on the last block of the newest user turn, of the
    turns holding the results `anchors` names (tool_use ids) and, while fewer than three, of the
    user turn before the newest (the system block is the fourth)."""
    users = [i for i, m in enumerate(messages) if m["role"] == "user" and m["content"]]
    held = {i for i in users if any(b.get("tool_use_id") in anchors for b in messages[i]["content"])}
    chosen = set(users[-1:]) | held
    if len(chosen) < 3:
        chosen |= set(users[-2:])
    messages = list(messages)
    for i in chosen:
        content = list(messages[i]["content"])
        content[-1] = dict(content[-1], cache_control=dict(MARK))
        messages[i] = dict(messages[i], content=content)
    return messages


NARROWING = ("name", "selector", "label_selector", "container", "tail", "since_seconds", "type",
             "involved_kind", "kind", "window_minutes", "minutes", "match")


def narrowing_hint(input_schema):
    """How the model can ask for less, from the arguments the tool takes."""
    props = (input_schema or {}).get("properties") or {}
    names = [n for n in NARROWING if n in props]
    if names:
        return "call it again narrowed with " + ", ".join(names)
    return "narrow the call (a name, a selector, a tail or a shorter window)"


class Keeper:
    """One run's context management: the result cap, the budget, and the figures for the
    outcome (`stats()`). The loop calls `result` for every executed result, `prepare` before
    every model call and `counted` after every response."""

    def __init__(self, *, max_result_bytes, budget_tokens):
        self.max_result_bytes = max_result_bytes
        self.budget = Budget(budget_tokens)
        self.clearings, self.cleared_results, self.cleared_bytes = 0, 0, 0
        self.freed = 0            # bytes the conversation no longer carries, from every clearing
        self.saved_bytes = 0      # what was not sent again: `freed` summed over later requests
        self.cut_results = 0
        self.largest = None       # {tool, step, bytes} of the largest result a tool returned
        self.anchors = ()         # the last result each of the last clearings cleared (ids)

    def result(self, text, *, tool, step, input_schema=None):
        """A redacted tool result -> Capped (what the model is shown)."""
        capped = cap_result(text, self.max_result_bytes, hint=narrowing_hint(input_schema))
        self.cut_results += capped.cut
        if self.largest is None or capped.full_bytes > self.largest["bytes"]:
            self.largest = {"tool": tool, "step": step, "bytes": capped.full_bytes}
        return capped

    def prepare(self, build, messages, *, clearable_ids, describe):
        """(request, Clearing or None): build() the request; when its estimate is over the
        budget, clear old results in `messages` (in place) and build it again. build() places
        its breakpoints by `anchors`."""
        request = build()
        size = request_bytes(request)
        clearing = None
        if self.budget.over(size):
            def measure():
                return self.budget.estimate(request_bytes(build()))
            clearing = clear_results(messages, measure=measure, target=self.budget.tokens * CLEAR_TO,
                                     ids=clearable_ids, describe=describe)
            if clearing.results:
                self.clearings += 1
                self.cleared_results += clearing.results
                self.cleared_bytes += clearing.bytes
                self.freed += clearing.bytes
                self.anchors = self.anchors[-1:] + clearing.tool_use_ids[-1:]
                request = build()   # reads up to the last clearing's end, writes up to this one's
                self.anchors = self.anchors[-1:]
                size = request_bytes(request)
        self.saved_bytes += self.freed
        self.budget.sent(size)
        return request, clearing

    def counted(self, input_tokens):
        self.budget.counted(input_tokens)

    def stats(self, usage):
        """The outcome's `context` figures; `usage` is the run's token totals by kind."""
        total_input = usage["input"] + usage["cache_write"] + usage["cache_read"]
        return {"cache_read_share": round(usage["cache_read"] / total_input, 4) if total_input else 0.0,
                "budget_tokens": self.budget.tokens or 0, "max_result_bytes": self.max_result_bytes,
                "clearings": self.clearings, "cleared_results": self.cleared_results,
                "cleared_bytes": self.cleared_bytes, "saved_bytes": self.saved_bytes,
                "saved_tokens_estimate": int(self.saved_bytes / self.budget.bytes_per_token),
                "cut_results": self.cut_results, "largest_result": self.largest}


def cost_tail(stats):
    """The cost line's tail: cache share, the largest result, cuts, what clearing saved."""
    parts = [f"{stats['cache_read_share']:.0%} of input from the prompt cache"]
    largest = stats.get("largest_result")
    if largest:
        parts.append(f"largest result {largest['tool']} {largest['bytes']:,} bytes")
    if stats["cut_results"]:
        parts.append(f"{stats['cut_results']} result(s) cut to {stats['max_result_bytes']:,} bytes")
    if stats["clearings"]:
        parts.append(f"cleared {stats['cleared_results']} old result(s) in {stats['clearings']} "
                     f"batch(es), ~{stats['saved_tokens_estimate']:,} input tokens not sent again")
    return " · ".join(parts)
