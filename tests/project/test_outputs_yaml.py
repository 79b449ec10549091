"""A tiny reader for the YAML subset the outputs/ files use, and its tests.

Reads block mappings, block lists (including "- key: value" items), [flow, lists] and plain or
quoted scalars (integers and true/false become int and bool). Anything else (anchors, block
scalars, flow mappings, tabs, duplicate keys) is a YamlSubsetError, and so is a plain value that
a real YAML parser would read differently, such as one containing ": " or " #". Used by
test_outputs.py (front matter) and test_outputs_rbac.py (manifests); pytest is the only test
dependency, so there is no PyYAML here.
"""

import re

import pytest


class YamlSubsetError(ValueError):
    """Text this reader does not accept, or that a real YAML parser would read differently."""


_KEY = re.compile(r"([A-Za-z0-9_.\-/]+):(?= |$)")


def _scalar(text, number):
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text[:1] in set("&*|>{}[]!%@`,") or ": " in text or " #" in text or text.endswith(":"):
        raise YamlSubsetError(f"line {number}: quote this value or simplify it: {text!r}")
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    return {"true": True, "false": False}.get(text, text)


def _value(text, number):
    if not text.startswith("["):
        return _scalar(text, number)
    if not text.endswith("]"):
        raise YamlSubsetError(f"line {number}: unclosed flow list: {text!r}")
    inner = text[1:-1].strip()
    return [_scalar(part.strip(), number) for part in inner.split(",")] if inner else []


def _lines(text):
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        body = raw.lstrip(" ")
        if body.startswith("\t"):
            raise YamlSubsetError(f"line {number}: tab in indentation")
        if body.strip() and not body.startswith("#"):
            lines.append((len(raw) - len(body), body.rstrip(), number))
    return lines


def _is_item(text):
    return text == "-" or text.startswith("- ")


def _block(lines, pos, indent):
    return (_sequence if _is_item(lines[pos][1]) else _mapping)(lines, pos, indent)


def _sequence(lines, pos, indent):
    items = []
    while pos < len(lines) and lines[pos][0] == indent and _is_item(lines[pos][1]):
        _, text, number = lines[pos]
        rest = text[1:].lstrip(" ")
        if not rest:
            raise YamlSubsetError(f"line {number}: empty list item")
        if _KEY.match(rest):  # "- key: value" opens a mapping at the column of "key"
            lines[pos] = (indent + len(text) - len(rest), rest, number)
            item, pos = _mapping(lines, pos, lines[pos][0])
        else:
            item, pos = _value(rest, number), pos + 1
        items.append(item)
    return items, pos


def _mapping(lines, pos, indent):
    result = {}
    while pos < len(lines) and lines[pos][0] == indent and not _is_item(lines[pos][1]):
        _, text, number = lines[pos]
        match = _KEY.match(text)
        if not match:
            raise YamlSubsetError(f"line {number}: expected 'key: value', got {text!r}")
        key, rest = match.group(1), text[match.end():].strip()
        if key in result:
            raise YamlSubsetError(f"line {number}: duplicate key {key!r}")
        pos += 1
        nested = pos < len(lines) and (
            lines[pos][0] > indent or (lines[pos][0] == indent and _is_item(lines[pos][1])))
        if rest:
            result[key] = _value(rest, number)
        elif nested:
            result[key], pos = _block(lines, pos, lines[pos][0])
        else:
            result[key] = None
    return result, pos


def parse_yaml_subset(text):
    """Parse one document of the subset; raises YamlSubsetError on anything outside it."""
    lines = _lines(text)
    if not lines:
        return None
    value, pos = _block(lines, 0, lines[0][0])
    if pos < len(lines):
        raise YamlSubsetError(f"line {lines[pos][2]}: unexpected indentation: {lines[pos][1]!r}")
    return value


def parse_yaml_documents(text):
    """Parse a '---'-separated stream, skipping empty documents."""
    chunks = re.split(r"(?m)^---[ \t]*$", text)
    return [parse_yaml_subset(chunk) for chunk in chunks if _lines(chunk)]


def read_front_matter(text):
    """Split a Markdown file into (front matter mapping, body)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise YamlSubsetError("no front matter: the file must start with a '---' line")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise YamlSubsetError("front matter is not closed by a second '---' line")
    meta = parse_yaml_subset("\n".join(lines[1:end]))
    if not isinstance(meta, dict):
        raise YamlSubsetError("front matter is not a mapping of keys to values")
    return meta, "\n".join(lines[end + 1:])


# --- tests ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("name: x\n---\n", "must start with"),
    ("---\nname: x\n", "not closed"),
    ("---\ndescription: Use when: pods restart\n---\n", "quote this value"),
    ("---\nname: x # trailing comment\n---\n", "quote this value"),
    ("---\nname: x\nname: y\n---\n", "duplicate key"),
    ("---\nname: x\n\ttools: a\n---\n", "tab in indentation"),
    ("---\nname: &anchor x\n---\n", "quote this value"),
    ("---\nname: x\n   odd: y\n---\n", "unexpected indentation"),
    ("---\n- just a list\n---\n", "not a mapping"),
])
def test_reader_rejects_what_it_cannot_read_safely(text, message):
    with pytest.raises(YamlSubsetError, match=message):
        read_front_matter(text)


def test_reader_reads_nested_lists_and_mappings():
    text = ("kind: ClusterRole\nmetadata:\n  name: r\nrules:\n  - apiGroups: [\"\"]\n"
            "    verbs:\n    - get\n    - list\n  - apiGroups: [apps]\nn: 3\nflag: false\n")
    assert parse_yaml_subset(text) == {
        "kind": "ClusterRole", "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "verbs": ["get", "list"]}, {"apiGroups": ["apps"]}],
        "n": 3, "flag": False}
