"""write_report: the schema file, validation, grounding of quotes and names, text rendering."""

import copy
import json
import random

import pytest

from triage_agent import report as report_module
from triage_agent.report import (GENERATED_NAME, ReportSchemaError, check_grounding,
                                 load_report_schema, quote_in, render_text, validate_report)
from triage_agent.schema import strict_tool_schema

POD = "checkout-6f8d9c7b5d-x7k2p"
RESULTS = {
    "toolu_pods": ("NAME                        READY   STATUS             RESTARTS   AGE\n"
                   f"{POD}   0/1     CrashLoopBackOff   47         3h\n"
                   "checkout-6f8d9c7b5d-q9w4z   0/1     CrashLoopBackOff   46         3h\n"),
    "toolu_logs": ("2026-11-05T01:58:01Z INFO  starting checkout service\n"
                   "2026-11-05T01:58:01Z INFO  connecting to db\n"
                   "2026-11-05T01:58:02Z FATAL: required environment variable "
                   "PAYMENT_API_URL is not set\n"),
    "toolu_describe": ("Name:         checkout-6f8d9c7b5d-x7k2p\n"
                       "Controlled By:  ReplicaSet/checkout-6f8d9c7b5d\n"
                       "    Last State:     Terminated\n"
                       "      Reason:       Error\n"
                       "      Exit Code:    1\n"),
}


def good_report():
    return {
        "summary": "checkout in prod is in CrashLoopBackOff: PAYMENT_API_URL is not set.",
        "severity": "high",
        "affected": [{"kind": "Deployment", "namespace": "prod", "name": "checkout"},
                     {"kind": "Pod", "namespace": "prod", "name": POD}],
        "evidence": [
            {"tool_use_id": "toolu_logs",
             "quote": "FATAL: required environment variable PAYMENT_API_URL is not set",
             "interpretation": "the process exits at start-up"},
            {"tool_use_id": "toolu_describe", "quote": "Last State: Terminated\nReason: Error",
             "interpretation": f"{POD} terminated with an error"},
        ],
        "hypothesis": "The current revision (ReplicaSet checkout-6f8d9c7b5d) lacks the "
                      "PAYMENT_API_URL variable.",
        "confidence": "high",
        "proposed_actions": [{"kind": "rollout_undo", "namespace": "prod", "target": "checkout",
                              "reason": "go back to the revision that had the variable"}],
        "next_checks": ["compare the env of the last two checkout revisions"],
    }


# --- the schema file --------------------------------------------------------------------------

def walk(schema, path="(root)"):
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], f"{path}[]")


def test_schema_objects_are_closed_and_fully_required():
    for path, node in walk(load_report_schema()):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False, path
            assert sorted(node["required"]) == sorted(node["properties"]), path


def test_tool_definition_uses_the_file_and_strips_cleanly_for_strict_mode():
    tool = report_module.WRITE_REPORT_TOOL
    assert tool["name"] == "write_report"
    assert tool["input_schema"] == report_module.REPORT_SCHEMA == load_report_schema()
    for phrase in ("exactly once", "verbatim", "tool_use_id"):
        assert phrase in tool["description"]
    strict = json.dumps(strict_tool_schema(tool["input_schema"]))
    for keyword in ('"minLength"', '"maxLength"', '"maxItems"', '"pattern"', '"$schema"'):
        assert keyword not in strict


def test_missing_or_broken_schema_file_is_a_clear_error(tmp_path):
    with pytest.raises(ReportSchemaError, match="not found"):
        load_report_schema(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ReportSchemaError, match="unreadable"):
        load_report_schema(broken)


def test_unknown_module_attribute_still_raises():
    with pytest.raises(AttributeError):
        report_module.NOT_A_THING


# --- validation -------------------------------------------------------------------------------

def test_a_good_report_is_valid():
    assert validate_report(good_report()) == []


@pytest.mark.parametrize("change,message", [
    (lambda r: r.pop("summary"), "summary: is required"),
    (lambda r: r.update(summary=""), "summary: must be at least 1"),
    (lambda r: r.update(severity="urgent"), "severity: must be one of"),
    (lambda r: r.update(confidence="certain"), "confidence: must be one of"),
    (lambda r: r.update(extra=1), "extra: is not an allowed property"),
    (lambda r: r["evidence"][1].pop("quote"), "evidence[1].quote: is required"),
    (lambda r: r["evidence"][0].update(quote=""), "evidence[0].quote: must be at least 1"),
    (lambda r: r["affected"][0].update(uid="x"), "affected[0].uid: is not an allowed"),
    (lambda r: r["proposed_actions"][0].update(kind="delete_namespace"),
     "proposed_actions[0].kind: must be one of"),
    (lambda r: r["proposed_actions"][0].update(target="--all"),
     "proposed_actions[0].target: must match pattern"),
    (lambda r: r.update(next_checks=["x"] * 21), "next_checks: must have at most 20"),
    (lambda r: r.update(affected="checkout"), "affected: must be array"),
])
def test_schema_errors_name_the_field(change, message):
    report = good_report()
    change(report)
    errors = validate_report(report)
    assert any(error.startswith(message) for error in errors), errors


def test_validation_of_a_non_object_does_not_raise():
    assert validate_report("a report") and validate_report(None)


# --- grounding --------------------------------------------------------------------------------

def test_a_grounded_report_has_no_warnings():
    assert check_grounding(good_report(), RESULTS) == []


@pytest.mark.parametrize("quote", [
    "FATAL: required environment variable PAYMENT_API_URL is not set",
    "FATAL:  required environment\n variable\tPAYMENT_API_URL is not set",
    "  Exit Code:    1  ",
    "Controlled By: ReplicaSet/checkout-6f8d9c7b5d\nLast State: Terminated",
    # a run of lines, each quoted in part: timestamps dropped
    "INFO  connecting to db\nFATAL: required environment variable PAYMENT_API_URL",
])
def test_whitespace_varied_and_line_run_quotes_are_accepted(quote):
    assert quote_in(quote, RESULTS["toolu_logs"] + RESULTS["toolu_describe"])


@pytest.mark.parametrize("quote", [
    "FATAL: PAYMENT_API_URL is not set",                       # words dropped
    "fatal: required environment variable PAYMENT_API_URL is not set",  # case changed
    "FATAL: required environment variable PAYMENT_API_URL is missing",
    "connecting to db\nstarting checkout service",             # lines out of order
    "INFO  connecting to db\n\nPAYMENT_API_URL is set",         # second line invented
])
def test_altered_or_invented_quotes_are_rejected(quote):
    assert not quote_in(quote, RESULTS["toolu_logs"])


def test_any_slice_of_a_result_is_accepted_as_a_quote():
    rng = random.Random(7)
    text = "\n".join(RESULTS.values())
    for _ in range(300):
        start = rng.randrange(len(text) - 1)
        piece = text[start:rng.randrange(start + 1, len(text) + 1)]
        if piece.strip():
            assert quote_in(piece, text), piece


def test_invented_quote_is_named_with_its_call():
    report = good_report()
    report["evidence"][0]["quote"] = "FATAL: database password rejected"
    assert check_grounding(report, RESULTS) == \
        ["evidence[0]: quote not found in the result of toolu_logs"]


def test_quote_must_come_from_the_call_it_names():
    report = good_report()
    report["evidence"][1]["tool_use_id"] = "toolu_logs"  # the text is in toolu_describe
    assert check_grounding(report, RESULTS) == \
        ["evidence[1]: quote not found in the result of toolu_logs"]


def test_unknown_or_unexecuted_tool_use_id_is_rejected():
    report = good_report()
    report["evidence"][0]["tool_use_id"] = "toolu_never_ran"
    results = dict(RESULTS)
    assert check_grounding(report, results) == \
        ["evidence[0]: tool_use_id 'toolu_never_ran' is not a tool call that ran in this run"]


def test_whitespace_only_quote_is_rejected():
    report = good_report()
    report["evidence"][0]["quote"] = " \n "
    assert check_grounding(report, RESULTS) == ["evidence[0]: quote is empty"]


def test_invented_affected_name_is_rejected_but_a_name_prefix_of_a_pod_is_not():
    report = good_report()
    report["affected"].append({"kind": "Pod", "namespace": "prod",
                               "name": "checkout-6f8d9c7b5d-abcde"})
    report["affected"].append({"kind": "Deployment", "namespace": "prod", "name": "heckout"})
    report["affected"].append({"kind": "Pod", "namespace": "prod", "name": "6f8d9c7b5d-x7k2p"})
    assert check_grounding(report, RESULTS) == [
        "affected[2]: name 'checkout-6f8d9c7b5d-abcde' does not appear in any tool result",
        "affected[3]: name 'heckout' does not appear in any tool result",
        "affected[4]: name '6f8d9c7b5d-x7k2p' does not appear in any tool result",
    ]


def test_a_pod_named_in_a_shell_style_group_is_grounded_and_one_outside_it_is_not():
    # get_pods names healthy pods of one owner as OWNER-{a,b,c}
    results = {"toolu_01": "frontend-74b9c5d6f8: 3 pods age=6d nodes=node-a: frontend-74b9c5d6f8-{7wlqb,d4t6m,lzbqm}"}
    report = {"evidence": [], "summary": "frontend-74b9c5d6f8-d4t6m and frontend-74b9c5d6f8-zzzzz",
              "affected": [{"kind": "Pod", "namespace": "prod", "name": name}
                           for name in ("frontend-74b9c5d6f8-lzbqm", "frontend-74b9c5d6f8-bbbbb",
                                        "xfrontend-74b9c5d6f8-7wlqb")]}
    assert check_grounding(report, results) == [
        "affected[1]: name 'frontend-74b9c5d6f8-bbbbb' does not appear in any tool result",
        "affected[2]: name 'xfrontend-74b9c5d6f8-7wlqb' does not appear in any tool result",
        "summary: name 'frontend-74b9c5d6f8-zzzzz' does not appear in any tool result"]


def test_invented_generated_names_in_free_text_are_named_by_field():
    report = good_report()
    report["summary"] += " Pod checkout-6f8d9c7b5d-zz7kq restarted."
    report["hypothesis"] = "ReplicaSet checkout-7b9f5c4d8b rolled out a bad config."
    report["evidence"][0]["interpretation"] = f"{POD} and checkout-6f8d9c7b5d-x7k2q both fail"
    report["next_checks"].append("kubectl logs checkout-6f8d9c7b5d-x7k2p --previous")
    report["proposed_actions"][0]["target"] = "checkout-v2"
    assert check_grounding(report, RESULTS) == [
        "proposed_actions[0].target: 'checkout-v2' does not appear in any tool result",
        "summary: name 'checkout-6f8d9c7b5d-zz7kq' does not appear in any tool result",
        "hypothesis: name 'checkout-7b9f5c4d8b' does not appear in any tool result",
        "evidence[0].interpretation: name 'checkout-6f8d9c7b5d-x7k2q' does not appear in any "
        "tool result",
    ]


@pytest.mark.parametrize("text,names", [
    (f"pod/{POD} is down", [POD]),
    ("rs checkout-6f8d9c7b5d, pod cart-5d8f6c7b9-h2k4m.", ["checkout-6f8d9c7b5d",
                                                          "cart-5d8f6c7b9-h2k4m"]),
    ("kube-system, node-a, readiness-probe, coredns, cart:v2.4.1-rc0, 2026-11-05T01:58:02Z", []),
    ("PAYMENT_API_URL, search-engine-primary, frontend-deployment", []),
    ("checkout-6f8d9c7b5d-x7k2p-extra", []),  # not shaped like a generated name
])
def test_generated_name_pattern(text, names):
    assert GENERATED_NAME.findall(text) == names


def test_grounding_survives_malformed_input():
    assert check_grounding("report", RESULTS) == ["(root): report must be an object"]
    odd = {"evidence": ["x", {"tool_use_id": 3}], "affected": None, "summary": 5}
    assert check_grounding(odd, {"a": None}) == \
        ["evidence[1]: tool_use_id 3 is not a tool call that ran in this run"]


# --- text -------------------------------------------------------------------------------------

def test_render_text_order_and_contents():
    report = good_report()
    warning = "evidence[0]: quote not found in the result of toolu_logs"
    text = render_text(report, grounding_warnings=[warning], context="kind-dev")
    order = ["SEVERITY: HIGH", report["summary"], "Affected", f"Pod         prod/{POD}",
             "Evidence", "from toolu_logs", "| FATAL: required environment variable",
             "-> the process exits at start-up", "Hypothesis (confidence: high)",
             "Proposed actions", "1. rollout_undo prod/checkout",
             "run: kubectl rollout undo deployment/checkout -n prod --context kind-dev",
             "Next checks", "- compare the env", "Grounding warnings", "! " + warning]
    positions = [text.find(piece) for piece in order]
    assert -1 not in positions, [p for p, i in zip(order, positions) if i == -1]
    assert positions == sorted(positions)
    assert "| Reason: Error" in text  # multi-line quotes keep their lines
    assert "run: kubectl --kubeconfig 'my config' rollout undo" in render_text(
        report, kubeconfig="my config")


def test_render_text_without_warnings_or_items():
    report = good_report()
    report.update(affected=[], evidence=[], proposed_actions=[], next_checks=[],
                  severity="none")
    text = render_text(report)
    assert "Grounding warnings" not in text and text.count("none") >= 4
    assert text.startswith("SEVERITY: NONE\n")


def test_render_text_escapes_control_characters_and_never_raises():
    report = copy.deepcopy(good_report())
    report["summary"] = "all fine\x1b]0;owned\x07\x1b[2J"
    report["evidence"][0]["quote"] = "line\r\x1b[1Afake"
    text = render_text(report)
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    assert render_text(None).startswith("SEVERITY: UNKNOWN")
    assert render_text({"affected": [1, {"kind": None}], "next_checks": [7],
                        "proposed_actions": [{"kind": "drop_db"}]})
