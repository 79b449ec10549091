"""The reader of the outputs/ YAML files (tests/support/yaml_docs.py, PyYAML): what it refuses,
and that it reads the shapes the manifests and front matter use."""

import pytest

from tests.support.yaml_docs import YamlError, load_documents, read_front_matter

# libyaml (yaml.CSafeLoader, see tests/support/yaml_docs.py) words a tab in indentation its own way
WORDINGS = {"found character '\\\\t'": "found character '\\\\t'|found a tab character"}


@pytest.mark.parametrize("text, message", [
    ("name: x\n---\n", "must start with"),
    ("---\nname: x\n", "not closed"),
    ("---\ndescription: Use when: pods restart\n---\n", "mapping values are not allowed"),
    ("---\nname: x\nname: y\n---\n", "duplicate key 'name'"),
    ("---\nname: x\n\ttools: a\n---\n", "found character '\\\\t'"),
    ("---\nname: *anchor\n---\n", "undefined alias"),
    ("---\nname: x\n   odd: y\n---\n", "mapping values are not allowed"),
    ("---\n- just a list\n---\n", "not a mapping"),
    ("---\n---\n", "not a mapping"),
    ("---\nname: !!python/object:os.system x\n---\n", "could not determine a constructor"),
])
def test_reader_rejects_what_it_cannot_read_safely(text, message):
    with pytest.raises(YamlError, match=WORDINGS.get(message, message)):
        read_front_matter(text)


def test_a_duplicate_key_deep_in_a_manifest_is_an_error():
    text = "kind: Role\nrules:\n  - verbs: [get]\n    verbs: [delete]\n"
    with pytest.raises(YamlError, match="duplicate key 'verbs'"):
        load_documents(text)


def test_reader_reads_nested_lists_and_mappings_and_streams():
    text = ("kind: ClusterRole\nmetadata:\n  name: r\nrules:\n  - apiGroups: [\"\"]\n"
            "    verbs:\n    - get\n    - list\n  - apiGroups: [apps]\nn: 3\nflag: false\n"
            "---\n---\nkind: Service\n")
    assert load_documents(text) == [{
        "kind": "ClusterRole", "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "verbs": ["get", "list"]}, {"apiGroups": ["apps"]}],
        "n": 3, "flag": False}, {"kind": "Service"}]
    meta, body = read_front_matter("---\nname: x\ntools: [a, b]\n---\nbody\n")
    assert meta == {"name": "x", "tools": ["a", "b"]} and body == "body"
