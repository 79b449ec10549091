"""The outputs/ YAML files read with PyYAML (a test-only dependency), strictly.

    load_documents(text)       -> the documents of a '---'-separated stream, empty ones left out
    read_front_matter(text)    -> (front matter mapping, body) of a Markdown file

Safe loading only (no Python objects), and a duplicate key in a mapping is an error, as it is
to kubectl's strict decoding (PyYAML itself keeps the last value and says nothing). Every error
is a YamlError: PyYAML's own (with its line and column) or one of these.

PyYAML parses with libyaml when its wheel carries it (the pinned one does: yaml.CSafeLoader),
else in pure Python; the two word a few errors differently (a tab in indentation). The pure
Python parser took 26 to 37 ms per read of the outputs/ files against 4 ms for libyaml, and the
suite reads them over 600 times.
"""

import yaml


class YamlError(ValueError):
    """Text that is not YAML, has a duplicate key, or is not the shape asked for."""


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """A safe loader that refuses a mapping with the same key twice."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_documents(text):
    """The non-empty documents of a YAML stream."""
    try:
        return [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]
    except yaml.YAMLError as exc:
        raise YamlError(str(exc)) from None


def read_front_matter(text):
    """Split a Markdown file into (front matter mapping, body)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise YamlError("no front matter: the file must start with a '---' line")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise YamlError("front matter is not closed by a second '---' line")
    docs = load_documents("\n".join(lines[1:end]))
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise YamlError("front matter is not a mapping of keys to values")
    return docs[0], "\n".join(lines[end + 1:])
