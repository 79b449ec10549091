"""API reads through `kubectl get --raw PATH`, behind the reader interface the tool families use.

    reader.get_json("/api/v1/namespaces/prod/configmaps/x")      -> dict
    reader.list_json("/api/v1/namespaces/prod/pods", {"fieldSelector": ...})
                                                                  -> {"items": [...]} (every page)
    reader.get_text(path, query)                                  -> str
    failures raise ReadError with a one-line message for the model

Paths are built by the tool modules from checked names only; they travel to kubectl inside one
`--raw=PATH?QUERY` token. Lists are read in pages of PAGE_LIMIT with `continue`, as kubectl does.
"""

import json
from urllib.parse import urlencode

PAGE_LIMIT = 500
PAGES_MAX = 100


class ReadError(Exception):
    """A read that failed; the message is one line, ready for the model."""


class RawReader:
    """Reads API paths with one kubectl process per request (see Kubectl.run for the limits)."""

    def __init__(self, kubectl, *, cancelled=None):
        self.kubectl, self.cancelled = kubectl, cancelled

    def _raw(self, path, query):
        target = path + ("?" + urlencode(query) if query else "")
        result = self.kubectl.run("get", [f"--raw={target}"], cancelled=self.cancelled)
        if not result.ok:
            raise ReadError(result.error)
        return result.stdout

    def get_text(self, path, query=None):
        return self._raw(path, query).decode("utf-8", "replace")

    def get_json(self, path, query=None):
        data = self._raw(path, query)
        try:
            doc = json.loads(data)
        except ValueError:
            raise ReadError(f"the API answered {path} with something that is not JSON: "
                            + data[:200].decode("utf-8", "replace")) from None
        if not isinstance(doc, dict):
            raise ReadError(f"the API answered {path} with JSON that is not an object")
        return doc

    def list_json(self, path, query=None):
        items, token = [], ""
        for _ in range(PAGES_MAX):
            page = self.get_json(path, dict(query or {}, limit=str(PAGE_LIMIT),
                                            **({"continue": token} if token else {})))
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return {"kind": page.get("kind", "List"), "items": items}
        raise ReadError(f"{path}: more than {PAGES_MAX * PAGE_LIMIT} objects; narrow the query")
