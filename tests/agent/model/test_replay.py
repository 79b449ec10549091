"""replay.py: fixture checks, ordered responses, error items as ApiError, exhaustion, recording;
and every shipped fixture loads."""

import json
from pathlib import Path

import pytest

from triage_agent.model import replay
from triage_agent.seams import RunEnded
from triage_agent.model.messages import ApiError

REPLAY = Path(__file__).resolve().parents[3] / "fixtures" / "replay"
OK = {"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}


def test_responses_in_order_then_exhausted():
    model = replay.ReplayModel({"responses": [OK, dict(OK, stop_reason="refusal")]})
    assert model({})["stop_reason"] == "end_turn"
    assert model({})["stop_reason"] == "refusal"
    with pytest.raises(RunEnded) as ended:
        model({})
    assert ended.value.stop == "replay_exhausted" and len(model.requests) == 3


def test_error_item_raises_the_live_clients_error():
    model = replay.ReplayModel({"responses": [
        {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}}]})
    with pytest.raises(ApiError) as error:
        model({})
    assert (error.value.status, error.value.error_type) == (529, "overloaded_error")
    assert error.value.request_id == "replay-1"


@pytest.mark.parametrize("fixture,message", [
    ([], "expected a JSON object"),
    ({}, "'responses' must be a list"),
    ({"responses": [1]}, "responses[0] must be an object"),
    ({"responses": [{"stop_reason": "end_turn"}]}, "needs a 'content' list"),
    ({"responses": [{"error": "boom"}]}, "needs status, type and message"),
    ({"responses": [], "model": 5}, "'model' must be a string"),
])
def test_bad_fixtures_are_explained(tmp_path, fixture, message):
    path = tmp_path / "f.json"
    path.write_text(json.dumps(fixture))
    with pytest.raises(replay.FixtureError, match=message.replace("[", r"\[")):
        replay.load_fixture(path)


def test_recording_round_trips(tmp_path):
    def live(request):
        if request.get("fail"):
            raise ApiError(500, "api_error", "boom", request_id="req_9")
        return OK
    recorder = replay.RecordingModel(live)
    recorder({})
    with pytest.raises(ApiError):
        recorder({"fail": True})
    path = tmp_path / "rec.json"
    replay.write_fixture(path, recorder.fixture(description="d", model="m"))
    again = replay.ReplayModel(replay.load_fixture(path))
    assert again({}) == OK
    with pytest.raises(ApiError) as error:
        again({})
    assert error.value.request_id == "req_9"


@pytest.mark.parametrize("path", sorted(REPLAY.glob("*.json")), ids=lambda p: p.stem)
def test_shipped_fixtures_load(path):
    fixture = replay.load_fixture(path)
    assert fixture["description"] and fixture["responses"]
    ids = [b["id"] for r in fixture["responses"] for b in r.get("content", ())
           if b.get("type") == "tool_use"]
    assert len(ids) == len(set(ids)) and all(i.startswith("toolu_") for i in ids)
