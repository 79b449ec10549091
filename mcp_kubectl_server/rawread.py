"""API reads through `kubectl get --raw PATH`: the Reader interface over the kubectl-per-call path.

    reader = KubectlReader(kubectl, cancelled=None)
    reader.get_json("/apis/apps/v1/namespaces/prod/deployments/web")       -> dict
    reader.list_json("/api/v1/namespaces/prod/pods", {"labelSelector": "app=web"}) -> dict (all pages)
    reader.get_text("/api/v1/namespaces/prod/pods/web-1/log", {"tailLines": "50"}) -> str

Paths are built by the tool modules from checked names only; the query is URL-encoded here. Any
failure raises ReadError with a one-line message for the model. `get --raw` is a GET, so this
keeps the server read-only; the persistent `kubectl proxy` reader offers the same three methods.
"""

import json
from urllib.parse import urlencode

PAGE_LIMIT = 500
PAGES_MAX = 200


class ReadError(Exception):
    """A read that failed; str() is one line the model can act on."""


class KubectlReader:
    """get_json / list_json / get_text over `kubectl get --raw`."""

    def __init__(self, kubectl, *, cancelled=None):
        self.kubectl = kubectl
        self.cancelled = cancelled

    def get_text(self, path, query=None):
        """The body at `path` as text (raises ReadError)."""
        url = path + ("?" + urlencode(sorted(query.items())) if query else "")
        result = self.kubectl.run("get", ["--raw", url], cancelled=self.cancelled)
        if not result.ok:
            raise ReadError(result.error)
        return result.stdout.decode("utf-8", "replace")

    def get_json(self, path, query=None):
        """The JSON object at `path` (raises ReadError)."""
        text = self.get_text(path, query)
        try:
            doc = json.loads(text)
        except ValueError:
            raise ReadError(f"the API server returned something that is not JSON for {path}: {text[:120]!r}") from None
        if not isinstance(doc, dict):
            raise ReadError(f"the API server returned a JSON {type(doc).__name__}, not an object, for {path}")
        return doc

    def list_json(self, path, query=None):
        """Every item of a list, read page by page with limit/continue."""
        query = dict(query or {}, limit=str(PAGE_LIMIT))
        items, doc = [], {}
        for _ in range(PAGES_MAX):
            doc = self.get_json(path, query)
            items += doc.get("items") or []
            token = (doc.get("metadata") or {}).get("continue")
            if not token:
                break
            query["continue"] = token
        return dict(doc, items=items)
