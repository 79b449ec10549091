"""Price table, cost, audit log, trace and span builders (triage_agent.telemetry.records)."""

import io
import json
import os

import pytest

from triage_agent.telemetry.records import (PRICES_TAKEN, Recorder, Usage, audit_line, cost_line,
                                  cost_usd, money, price_for, tool_span)

MILLION = {"input_tokens": 1_000_000, "output_tokens": 0}


def usage(fresh=0, write=0, read=0, out=0, **extra):
    return {"input_tokens": fresh, "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read, "output_tokens": out, **extra}


@pytest.mark.parametrize("model, prices", [
    ("claude-opus-5-5", (4, 5, 0.20, 20)),
    ("claude-opus-5-5-20261015", (4, 5, 0.20, 20)),
    ("claude-sonnet-5-5", (2, 2.5, 0.20, 10)),
    ("claude-sonnet-5", (2, 2.5, 0.20, 10)),
    ("claude-sonnet-5-20260301", (2, 2.5, 0.20, 10)),
    ("claude-opus-5", (5, 6.25, 0.50, 25)),
    ("claude-opus-4-5", (5, 6.25, 0.50, 25)),
    ("claude-opus-4-5-20251101", (5, 6.25, 0.50, 25)),
    ("claude-opus-4-6", (5, 6.25, 0.50, 25)),
    ("claude-opus-4-8", (5, 6.25, 0.50, 25)),
    ("claude-opus-4-1", (15, 18.75, 1.50, 75)),     # the pricing page lists 4.1 and 4 apart
    ("claude-opus-4-1-20250805", (15, 18.75, 1.50, 75)),
    ("claude-opus-4-20250514", (15, 18.75, 1.50, 75)),
    ("claude-haiku-4-5", (1, 1.25, 0.10, 5)),
    ("claude-haiku-4-5-20251001", (1, 1.25, 0.10, 5)),
    ("claude-haiku-4-5@20251001", (1, 1.25, 0.10, 5)),
])
def test_each_family_prices_each_token_kind(model, prices):
    fresh, write, read, out = prices
    assert cost_usd(model, usage(fresh=1_000_000)) == pytest.approx(fresh)
    assert cost_usd(model, usage(write=1_000_000)) == pytest.approx(write)
    assert cost_usd(model, usage(read=1_000_000)) == pytest.approx(read)
    assert cost_usd(model, usage(out=1_000_000)) == pytest.approx(out)


@pytest.mark.parametrize("model", [
    "claude-opus-5-7",            # a newer version is not the old one's price
    "claude-opus-5-5x", "claude-opus-5-5-preview", "claude-opus-5-5-2026",
    "claude-haiku-4", "claude-haiku-5-5", "claude-sonnet-4-5", "gpt-5", "", None, 42,
    "claude-opus", "xclaude-opus-5",
])
def test_unknown_models_price_as_none(model):
    assert price_for(model) is None
    assert cost_usd(model, usage(fresh=10, out=10)) is None


def test_mixed_usage_adds_up():
    # opus 5.5: 1000 fresh, 2000 cache write, 10000 cache read, 500 out
    expected = (1000 * 4 + 2000 * 5 + 10000 * 0.20 + 500 * 20) / 1e6
    assert cost_usd("claude-opus-5-5", usage(1000, 2000, 10000, 500)) == pytest.approx(expected)


def test_malformed_usage_is_unpriced_not_guessed():
    assert cost_usd("claude-opus-5-5", usage(fresh=-1)) is None
    assert cost_usd("claude-opus-5-5", usage(fresh="10")) is None
    assert cost_usd("claude-opus-5-5", usage(out=True)) is None
    assert cost_usd("claude-opus-5-5", None) is None
    assert cost_usd("claude-opus-5-5", {}) == 0.0


def test_iterations_are_priced_each_by_its_own_model():
    mixed = usage(300, 0, 0, 30, iterations=[
        {"model": "claude-opus-5-5", "input_tokens": 100, "output_tokens": 10},
        {"model": "claude-sonnet-5-5", "input_tokens": 200, "output_tokens": 20}])
    expected = (100 * 4 + 10 * 20 + 200 * 2 + 20 * 10) / 1e6
    assert cost_usd("claude-opus-5-5", mixed) == pytest.approx(expected)


def test_an_unknown_iteration_model_makes_the_total_unknown():
    mixed = usage(iterations=[{"model": "claude-opus-5-5", "input_tokens": 1},
                              {"model": "claude-mystery-9", "input_tokens": 1}])
    assert cost_usd("claude-opus-5-5", mixed) is None
    assert cost_usd("claude-opus-5-5", usage(iterations=["junk"])) is None


def test_iteration_without_model_uses_the_response_model():
    assert cost_usd("claude-haiku-4-5", usage(iterations=[{"input_tokens": 1_000_000}])) == 1.0


def test_usage_accumulator_goes_unknown_and_stays_unknown():
    total = Usage()
    assert total.add("claude-opus-5-5", usage(1000, 0, 0, 100)) == pytest.approx(0.006)
    total.add("claude-opus-5-5", usage(0, 200, 300, 0))
    assert total.as_dict() == {"input": 1000, "output": 100, "cache_read": 300,
                               "cache_write": 200}
    assert total.cost == pytest.approx(0.006 + (200 * 5 + 300 * 0.2) / 1e6)
    assert total.add("mystery", usage(1, 0, 0, 1)) is None
    total.add("claude-opus-5-5", usage(1, 0, 0, 1))
    assert total.cost is None and total.input == 1002


def test_cost_line_format():
    total = Usage()
    total.add("claude-opus-5-5", usage(12_345, 2_000, 30_000, 800))
    line = cost_line("claude-opus-5-5", total)
    assert line == ("cost: claude-opus-5-5 · tokens: input 12,345 · cache write 2,000 ·"
                    " cache read 30,000 · output 800 · $0.0814 (prices of 2026-11)")
    unknown = Usage()
    unknown.add("claude-x", usage(1, 0, 0, 1))
    assert "$ unknown (no price for 'claude-x'" in cost_line("claude-x", unknown)
    assert PRICES_TAKEN == "2026-11"


# --- Recorder ---

def test_audit_is_flushed_per_entry_and_printed(tmp_path):
    path = tmp_path / "audit.jsonl"
    err = io.StringIO()
    rec = Recorder(audit_path=str(path), stderr=err, clock=lambda: 1_800_000_000.5)
    rec.audit(step=2, tool="get_logs", arguments={"namespace": "prod", "name": "web-1"},
              decision="executed", is_error=False, bytes=812)
    lines = path.read_text().splitlines()  # read before close: already on disk
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry == {"time": "2027-01-15T08:00:00.500Z", "trace_id": rec.trace_id,
                     "step": 2, "tool": "get_logs",
                     "arguments": {"namespace": "prod", "name": "web-1"},
                     "decision": "executed", "is_error": False, "bytes": 812}
    assert err.getvalue() == ("[audit] step 2 · get_logs namespace=prod name=web-1 ·"
                              " executed · 812 bytes\n")
    rec.audit(step=3, tool="delete_everything", decision="refused: unknown tool",
              is_error=True, violation="unknown_tool")
    assert len(path.read_text().splitlines()) == 2
    assert err.getvalue().splitlines()[1] == ("[audit] step 3 · delete_everything · refused:"
                                              " unknown tool · error · violation=unknown_tool")
    rec.close()


def test_quiet_keeps_the_file_but_not_the_stderr_line(tmp_path):
    err = io.StringIO()
    with Recorder(audit_path=str(tmp_path / "a.jsonl"), stderr=err, quiet=True) as rec:
        rec.audit(step=1, tool="get_pods")
    assert err.getvalue() == "" and len(rec.entries) == 1
    assert (tmp_path / "a.jsonl").read_text().count("\n") == 1


def test_audit_line_neutralises_model_supplied_control_characters():
    line = audit_line({"step": 1, "tool": "get_logs\n[audit] fake",
                       "arguments": {"name": "x\x1b[2Jy" + "z" * 500}})
    assert "\n" not in line and "\x1b" not in line and "\\x1b" in line
    assert len(line) <= 400


def test_audit_line_escapes_format_characters_like_the_approval_prompt():
    # a right-to-left override in an argument would reorder the rest of the operator's line
    line = audit_line({"step": 1, "tool": "get_pods", "arguments": {"namespace": "a\u202eb"}})
    assert "\u202e" not in line and "a\\u202eb" in line


def test_an_audit_path_that_cannot_be_opened_raises(tmp_path):
    # the audit log is a safety record: the CLI turns this into a usage error before any start
    with pytest.raises(OSError):
        Recorder(audit_path=str(tmp_path / "no" / "such" / "dir" / "a.jsonl"),
                 stderr=io.StringIO())


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failing_audit_file_warns_once_keeps_stderr_lines_and_says_why():
    err = io.StringIO()
    rec = Recorder(audit_path="/dev/full", stderr=err)
    assert rec.audit_ok() and rec.audit_error is None
    rec.audit(step=1, tool="get_pods")
    rec.audit(step=2, tool="get_events")
    text = err.getvalue()
    assert text.count("warning: cannot write the audit log") == 1
    assert "no action can execute for the rest of this run" in text
    assert "[audit] step 1 · get_pods" in text and "[audit] step 2 · get_events" in text
    assert not rec.audit_ok() and "No space left on device" in rec.audit_error
    rec.close()


def span(name="get_pods", **overrides):
    """A tool span draft, as the loop makes one."""
    fields = dict(step=1, name=name, call_id="toolu_1", arguments={"namespace": "prod"},
                  text="pods", is_error=False, started=1.0, ended=1.5)
    return tool_span(**{**fields, **overrides})


def test_trace_to_an_unwritable_path_never_raises(tmp_path):
    err = io.StringIO()
    target = tmp_path / "is-a-directory"
    target.mkdir()
    rec = Recorder(trace_path=str(target), stderr=err)
    for _ in range(3):
        rec.trace(span())
    rec.finish(None)
    assert err.getvalue().count("warning: cannot write the trace") == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_trace_disk_full_disables_tracing_with_one_warning():
    err = io.StringIO()
    rec = Recorder(trace_path="/dev/full", stderr=err)
    rec.trace(span(text="x" * 10_000))
    rec.trace(span())
    assert err.getvalue().count("warning: cannot write the trace") == 1
    rec.close()


def test_trace_writes_one_flushed_line_per_span_and_odd_records_become_events(tmp_path):
    path = tmp_path / "t.jsonl"
    rec = Recorder(trace_path=str(path), stderr=io.StringIO())
    cycle = {}
    cycle["self"] = cycle
    rec.trace(span(arguments={"obj": object()}))
    assert len(path.read_text().splitlines()) == 1   # on disk before the run ends
    rec.trace(cycle)
    rec.trace({"event": "history_repaired", "dropped": ["toolu_9"]})
    rec.trace(span("get_events"))
    rec.finish(None)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["name"] for line in lines] == ["execute_tool get_pods",
                                                "execute_tool get_events",
                                                "invoke_agent triage-agent"]
    events = lines[-1]["events"]
    assert [e["name"] for e in events] == ["triage_agent.note", "history_repaired"]
    assert {"key": "triage_agent.dropped", "value": {"stringValue": '["toolu_9"]'}} in \
        events[1]["attributes"]


def test_finish_happens_once_and_a_raising_exporter_is_one_warning(tmp_path):
    err, sent = io.StringIO(), []

    def exporter(spans):
        sent.append(spans)
        raise RuntimeError("collector on fire")

    rec = Recorder(trace_path=str(tmp_path / "t.jsonl"), stderr=err, exporter=exporter)
    rec.trace(span())
    rec.finish(None)
    rec.finish(None)
    assert len(sent) == 1 and [s["name"] for s in sent[0]] == ["execute_tool get_pods",
                                                              "invoke_agent triage-agent"]
    assert err.getvalue().count("warning: trace export failed") == 1


def test_money_rounds_float_noise_and_keeps_unknown():
    assert money(0.06612399999999999) == 0.066124
    assert money(None) is None and money(True) is None
    assert str(money(5 * 0.1 + 0.1 * 0.2 / 3)) == "0.506667"


def test_broken_stderr_does_not_raise(tmp_path):
    err = io.StringIO()
    err.close()
    rec = Recorder(audit_path=str(tmp_path / "a"), stderr=err)
    rec.audit(step=1, tool="get_pods")
    assert (tmp_path / "a").read_text().count("\n") == 1


def test_audit_line_shows_a_failed_tool_s_own_first_line():
    line = audit_line({"step": 2, "tool": "get_pods", "arguments": {"namespace": "prod"},
                       "decision": "executed", "is_error": True, "bytes": 120,
                       "error": "kubectl failed (exit 1): connection refused\x1b[2J"})
    assert line.endswith("executed · error · 120 bytes · kubectl failed (exit 1): "
                         "connection refused\\x1b[2J")
    assert "error=" not in line


def test_the_audit_log_stays_strict_json_when_a_model_sends_nan(tmp_path):
    audit = tmp_path / "audit.jsonl"
    rec = Recorder(audit_path=str(audit), stderr=io.StringIO())
    rec.audit(step=1, tool="get_pods", arguments={"namespace": float("nan"), "n": [float("inf")]})
    rec.close()

    def reject(name):
        raise AssertionError(f"{name} in a record")
    entry = json.loads(audit.read_text(), parse_constant=reject)
    assert entry["arguments"] == {"namespace": "nan", "n": ["inf"]}
