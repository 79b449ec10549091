"""The scripted model for --replay, and the recorder that writes the same format from a live run.

A replay fixture is one JSON object:

    {"description": "...", "model": "claude-...",            # model is optional
     "responses": [<Messages API response body>,             # returned in order, one per call
                   {"error": {"status": 529, "type": "overloaded_error", "message": "..."}}]}

An `error` item raises the same `ApiError` the live client raises. Running out of responses ends
the run with stop `replay_exhausted`. Everything else (request building, dispatch, the MCP
server) is the live path: only the model is scripted.
"""

import copy
import json

from triage_agent.seams import RunEnded
from triage_agent.model.errors import ApiError


class FixtureError(Exception):
    """A replay fixture that cannot be used, with the reason."""


def _check(fixture, where):
    if not isinstance(fixture, dict):
        raise FixtureError(f"{where}: expected a JSON object with a 'responses' list")
    responses = fixture.get("responses")
    if not isinstance(responses, list):
        raise FixtureError(f"{where}: 'responses' must be a list")
    for i, item in enumerate(responses):
        if not isinstance(item, dict):
            raise FixtureError(f"{where}: responses[{i}] must be an object")
        error = item.get("error")
        if error is not None and not (isinstance(error, dict)
                                      and isinstance(error.get("type"), str)):
            raise FixtureError(f"{where}: responses[{i}].error needs status, type and message")
        if error is None and not isinstance(item.get("content"), list):
            raise FixtureError(f"{where}: responses[{i}] needs a 'content' list (or 'error')")
    if "model" in fixture and not isinstance(fixture["model"], str):
        raise FixtureError(f"{where}: 'model' must be a string")
    return fixture


def load_fixture(path):
    """Read and check a replay fixture; FixtureError says what is wrong."""
    try:
        with open(path, encoding="utf-8") as handle:
            fixture = json.load(handle)
    except OSError as exc:
        raise FixtureError(f"cannot read replay fixture {path}: {exc.strerror or exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise FixtureError(f"replay fixture {path} is not valid JSON: {exc}") from exc
    return _check(fixture, str(path))


class ReplayModel:
    """Model seam returning a fixture's responses in order; keeps the requests it was sent."""

    def __init__(self, fixture):
        self.responses = _check(fixture, "fixture")["responses"]
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        n = len(self.requests)
        if n > len(self.responses):
            raise RunEnded("replay_exhausted", f"the replay fixture has {len(self.responses)} "
                           f"responses; model call {n} has none")
        item = self.responses[n - 1]
        if "error" in item:
            error = item["error"]
            raise ApiError(error.get("status"), error["type"], error.get("message", ""),
                           request_id=item.get("request_id") or f"replay-{n}")
        return copy.deepcopy(item)


class RecordingModel:
    """Wraps a live model and keeps each response (or ApiError) as a fixture item."""

    def __init__(self, model):
        self.model = model
        self.responses = []

    def __call__(self, request):
        try:
            response = self.model(request)
        except ApiError as exc:
            self.responses.append({"error": {"status": exc.status, "type": exc.error_type,
                                             "message": exc.message},
                                   "request_id": exc.request_id})
            raise
        self.responses.append(copy.deepcopy(response))
        return response

    def fixture(self, *, description, model):
        """The recorded run in replay-fixture form."""
        return {"description": description, "model": model, "responses": self.responses}


def write_fixture(path, fixture):
    """Write a fixture as indented JSON."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(fixture, handle, indent=1, ensure_ascii=False)
        handle.write("\n")
