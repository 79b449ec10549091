"""The JSON Schema subset validator and the strict-tool copy (triage_agent.schema)."""

import json
import random

import pytest

from triage_agent.schema import MAX_DEPTH, STRICT_FORMATS, STRICT_KEYS, strict_tool_schema, validate

REPORTISH = {
    "type": "object",
    "additionalProperties": False,
    "required": ["summary", "severity", "evidence"],
    "properties": {
        "summary": {"type": "string", "minLength": 1, "maxLength": 200},
        "severity": {"type": "string", "enum": ["critical", "high", "medium", "low", "none"]},
        "evidence": {
            "type": "array", "minItems": 1, "maxItems": 3,
            "items": {
                "type": "object", "additionalProperties": False,
                "required": ["tool_use_id", "quote"],
                "properties": {
                    "tool_use_id": {"type": "string", "pattern": "^toolu_[A-Za-z0-9]+$"},
                    "quote": {"type": "string", "minLength": 1},
                },
            },
        },
        "steps": {"type": "integer", "minimum": 0, "maximum": 12},
        "note": {"type": ["string", "null"]},
        "kind": {"const": "report"},
        "target": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
    },
}
GOOD = {"summary": "checkout crashloops", "severity": "high",
        "evidence": [{"tool_use_id": "toolu_01", "quote": "FATAL"}]}


def test_valid_instance_has_no_errors():
    assert validate(GOOD, REPORTISH) == []
    assert validate({**GOOD, "steps": 3, "note": None, "kind": "report", "target": None},
                    REPORTISH) == []


@pytest.mark.parametrize("change, expected", [
    ({"evidence": [{"tool_use_id": "toolu_01"}]}, "evidence[0].quote: is required"),
    ({"severity": "urgent"}, 'severity: must be one of "critical", "high", "medium", "low",'
                             ' "none" (got "urgent")'),
    ({"summary": ""}, "summary: must be at least 1 character(s) long (got 0)"),
    ({"summary": "x" * 201}, "summary: must be at most 200 characters long (got 201)"),
    ({"evidence": []}, "evidence: must have at least 1 item(s) (got 0)"),
    ({"evidence": [GOOD["evidence"][0]] * 4}, "evidence: must have at most 3 item(s) (got 4)"),
    ({"steps": -1}, "steps: must be >= 0 (got -1)"),
    ({"steps": 13}, "steps: must be <= 12 (got 13)"),
    ({"steps": 2.5}, "steps: must be integer (got number)"),
    ({"steps": True}, "steps: must be integer (got boolean)"),
    ({"steps": "3"}, "steps: must be integer (got string)"),
    ({"note": 5}, "note: must be one of string, null (got integer)"),
    ({"kind": "other"}, 'kind: must be "report" (got "other")'),
    ({"extra": 1}, "extra: is not an allowed property"),
    ({"evidence": [{"tool_use_id": "call 1", "quote": "q"}]},
     "evidence[0].tool_use_id: must match pattern"),
])
def test_field_level_messages(change, expected):
    errors = validate({**GOOD, **change}, REPORTISH)
    assert any(e.startswith(expected) for e in errors), errors


def test_missing_top_level_fields_are_each_named():
    assert validate({}, REPORTISH) == ["summary: is required", "severity: is required",
                                       "evidence: is required"]


def test_wrong_root_type():
    assert validate([], REPORTISH) == ["(root): must be object (got array)"]
    assert validate("text", {"type": "object"}) == ["(root): must be object (got string)"]


def test_integer_and_boolean_are_kept_apart():
    assert validate(1, {"type": "boolean"}) == ["(root): must be boolean (got integer)"]
    assert validate(False, {"type": "number"}) == ["(root): must be number (got boolean)"]
    assert validate(3.0, {"type": "integer"}) == []  # JSON: 3.0 is an integer
    assert validate(True, {"enum": [1]}) != []       # true is not 1
    assert validate(1, {"const": True}) != []
    assert validate(float("nan"), {"type": "number"}) != []


def test_any_of_reports_the_closest_form():
    errors = validate({**GOOD, "target": ""}, REPORTISH)
    assert errors[0] == "target: must match one of 2 allowed forms; the closest fails with:"
    assert any("at least 1 character" in e for e in errors[1:])


def test_additional_properties_as_schema():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert validate({"a": 1, "b": 2}, schema) == []
    assert validate({"a": "x"}, schema) == ["a: must be integer (got string)"]


def test_annotations_and_unknown_keywords_are_ignored():
    schema = {"type": "string", "format": "email", "description": "d", "title": "t",
              "x-whatever": 1, "uniqueItems": True}
    assert validate("not an email", schema) == []


def test_deep_nesting_is_bounded_not_a_crash():
    deep = current = []
    for _ in range(5000):
        current.append([])
        current = current[0]
    nested = {"type": "array"}
    nested["items"] = nested  # a self-referencing schema walks as deep as the instance
    errors = validate(deep, nested)
    assert errors == [f"{'[0]' * (MAX_DEPTH + 1)}: nested too deeply (more than {MAX_DEPTH}"
                      " levels)"]


def test_huge_strings_are_not_echoed_in_full():
    errors = validate({**GOOD, "severity": "A" * 1_000_000}, REPORTISH)
    assert len(errors) == 1 and len(errors[0]) < 300


def test_error_list_is_capped():
    schema = {"type": "object", "additionalProperties": False, "properties": {}}
    errors = validate({f"k{i}": i for i in range(500)}, schema)
    assert len(errors) == 21 and errors[-1].startswith("... and ")


def test_broken_schema_pieces_do_not_raise():
    assert validate("x", {"type": "string", "pattern": "("}) == [
        '(root): schema has an invalid pattern "("']
    assert validate({"a": 1}, {"required": "a", "properties": [], "anyOf": "x"}) == []
    assert validate(1, False) == ["(root): is not allowed"]
    assert validate(1, "not a schema") == []


def test_validate_never_raises_on_random_input():
    rng = random.Random(7)
    atoms = [None, True, 0, -1, 2.5, float("inf"), "", "x" * 10_000, object(), b"bytes",
             (1, 2), {1: "int key"}]

    def junk(depth=0):
        roll = rng.random()
        if depth > 4 or roll < 0.4:
            return rng.choice(atoms)
        if roll < 0.7:
            return [junk(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(["summary", "severity", "evidence", "q", "steps"]): junk(depth + 1)
                for _ in range(rng.randint(0, 4))}

    for _ in range(2000):
        result = validate(junk(), REPORTISH)
        assert isinstance(result, list) and all(isinstance(e, str) for e in result)


# --- strict_tool_schema ---

def _walk(schema):
    yield schema
    for sub in (schema.get("properties") or {}).values():
        yield from _walk(sub)
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"])
    for key in ("anyOf", "allOf"):
        for sub in schema.get(key) or []:
            yield from _walk(sub)


def test_strict_copy_keeps_only_accepted_keywords():
    strict = strict_tool_schema(REPORTISH)
    for node in _walk(strict):
        assert set(node) <= STRICT_KEYS, node
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
        assert node.get("minItems", 0) in (0, 1)
        assert node.get("format", "date") in STRICT_FORMATS


def test_strict_copy_forces_additional_properties_false_on_every_object():
    schema = {"type": "object", "properties": {
        "inner": {"type": "object", "properties": {"x": {"type": "string"}}},
        "map": {"type": "object", "additionalProperties": {"type": "string"}},
        "list": {"type": "array", "items": {"properties": {"y": {"type": "integer"}}}}}}
    strict = strict_tool_schema(schema)
    assert strict["additionalProperties"] is False
    assert strict["properties"]["inner"]["additionalProperties"] is False
    assert strict["properties"]["map"]["additionalProperties"] is False
    assert strict["properties"]["list"]["items"]["additionalProperties"] is False


def test_strict_copy_is_a_copy_and_names_what_it_dropped():
    before = json.dumps(REPORTISH, sort_keys=True)
    strict = strict_tool_schema(REPORTISH)
    assert json.dumps(REPORTISH, sort_keys=True) == before
    summary = strict["properties"]["summary"]
    assert "minLength" not in summary and "maxLength" not in summary
    assert "minLength: 1" in summary["description"]
    assert strict["properties"]["evidence"]["minItems"] == 1
    assert strict_tool_schema(REPORTISH, describe_dropped=False)["properties"]["summary"] == {
        "type": "string"}


def test_strict_copy_keeps_supported_formats_only():
    strict = strict_tool_schema({"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time"},
        "name": {"type": "string", "format": "dns-label"}}})
    assert strict["properties"]["when"]["format"] == "date-time"
    assert "format" not in strict["properties"]["name"]


def test_instances_valid_for_the_full_schema_stay_valid_for_the_strict_copy():
    assert validate(GOOD, strict_tool_schema(REPORTISH)) == []


def test_pattern_dollar_is_end_of_input_as_in_json_schema():
    """ECMA-262 `$` ends the input; Python's would also match before a final newline."""
    name = {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
    assert validate("prod", name) == []
    assert validate("prod\n", name) != []
    literal = {"type": "string", "pattern": r"^a\$b[$]c$"}
    assert validate("a$b$c", literal) == []
    assert validate("a$b$c\n", literal) != []
