"""sse.py in-process: event framing at any byte boundary, and every event type assembled into
exactly the message the API would have answered without streaming."""

import json
import random

import pytest

from tests.support.fake_messages_api import response, text, tool_use
from tests.support.fake_sse import cut, encode, error_event, events_for
from triage_agent.model.sse import EventDecoder, MessageAssembler, StreamError

THINKING = {"type": "thinking", "thinking": "Pods restart: check the logs — ünïcode 🚀 ok.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h+/=="}
CITED = {"type": "text", "text": "The log says so.",
         "citations": [{"type": "char_location", "cited_text": "FATAL", "document_index": 0,
                        "start_char_index": 0, "end_char_index": 5}]}
EVERYTHING = response(
    "tool_use", THINKING,
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
    text("Looking at the pods in «prod» ✓\nthen the logs."), CITED,
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
     "input": {"query": "CrashLoopBackOff \"exit 1\""}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
     "content": [{"type": "web_search_result", "url": "https://example.org", "title": "x"}]},
    tool_use("toolu_1", "get_logs", {"namespace": "prod", "name": "checkout-6f8d",
                                     "note": "quote \" backslash \\ snow ☃ end"}),
    tool_use("toolu_2", "get_pods", {}),
    usage={"input_tokens": 1200, "output_tokens": 345, "cache_creation_input_tokens": 7,
           "cache_read_input_tokens": 900})


def assemble(data, sizes):
    decoder, assembler = EventDecoder(), MessageAssembler()
    meanings = []
    for piece in cut(data, sizes):
        for name, payload in decoder.feed(piece):
            meanings.append(assembler.apply(name, payload))
    return assembler.message(), [m for m in meanings if m]


@pytest.mark.parametrize("sizes", [1, 2, 3, 5, [1, 7, 2, 64], 1 << 20])
@pytest.mark.parametrize("crlf", [False, True])
def test_every_event_type_at_every_split_gives_the_plain_message(sizes, crlf):
    data = encode(events_for(EVERYTHING), pings=True, crlf=crlf)
    message, meanings = assemble(data, sizes)
    assert message == EVERYTHING
    assert json.dumps(message, sort_keys=True) == json.dumps(EVERYTHING, sort_keys=True)
    assert ("block", "tool_use", "get_logs") in meanings
    assert meanings[-1] == ("tokens", 345) and meanings[0] == ("tokens", 1)


def test_random_cut_points_including_inside_characters():
    data = encode(events_for(EVERYTHING), pings=True)
    inside = [i for i in range(1, len(data)) if data[i] & 0xC0 == 0x80]  # continuation bytes
    assert inside   # the stream really has multi-byte characters to split
    rng = random.Random(7)
    for _ in range(30):
        points = sorted(rng.sample(range(1, len(data)), 40) + rng.sample(inside, 5))
        sizes = [b - a for a, b in zip([0] + points, points + [len(data)])]
        assert assemble(data, [s for s in sizes if s])[0] == EVERYTHING


def test_lone_cr_line_ends_comments_and_unknown_fields_and_events():
    events = events_for(response("end_turn", text("hi")))
    data = encode(events).replace(b"\n", b"\r")
    data = b": a comment\r\rid: 7\rretry: 100\r" + data
    data = data.replace(b"event: message_stop", b"event: future_event\rdata: <not json>\r\r"
                        b"data: {\"type\": \"ping\"}\r\revent: message_stop")
    assert assemble(data, 3)[0] == response("end_turn", text("hi"))


def test_data_split_over_several_data_lines():
    raw = b'event: message_start\ndata: {"type": "message_start",\ndata: "message": ' \
          + json.dumps(dict(response("end_turn"), content=[])).encode() + b'}\n\n'
    decoder = EventDecoder()
    ((name, data),) = decoder.feed(raw)
    assert name == "message_start" and json.loads(data)["message"]["content"] == []


def test_usage_comes_from_message_start_and_message_delta():
    events = events_for(EVERYTHING)
    start, delta = events[0][1]["message"]["usage"], events[-2][1]["usage"]
    assert start["input_tokens"] == 1200 and start["output_tokens"] == 1
    assert delta == {"output_tokens": 345}
    events[-2][1]["usage"].update(input_tokens=None, server_tool_use={"web_search_requests": 1})
    message, _ = assemble(encode(events), 1 << 20)
    assert message["usage"] == dict(EVERYTHING["usage"],
                                    server_tool_use={"web_search_requests": 1})


def test_a_fallback_block_names_the_model_that_answered():
    fallback = {"type": "fallback", "from": {"model": "claude-opus-5-5"},
                "to": {"model": "claude-sonnet-5-5-20261001"}, "trigger": {"type": "refusal"}}
    plain = response("end_turn", text("a"), fallback, text("b"),
                     model="claude-sonnet-5-5-20261001")
    events = events_for(plain)
    assert events[0][1]["message"]["model"] == "claude-opus-5-5"
    assert assemble(encode(events), 4)[0] == plain


def test_compaction_delta_and_stop_details():
    events = events_for(response("refusal", text("no")))
    events.insert(-2, ("content_block_start", {"type": "content_block_start", "index": 1,
                                               "content_block": {"type": "compaction"}}))
    events.insert(-2, ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                               "delta": {"type": "compaction_delta",
                                                         "content": "summary",
                                                         "encrypted_content": "enc"}}))
    events.insert(-2, ("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events[-2][1]["delta"]["stop_details"] = {"type": "refusal", "category": "cyber"}
    message, _ = assemble(encode(events), 9)
    assert message["content"][1] == {"type": "compaction", "content": "summary",
                                     "encrypted_content": "enc"}
    assert message["stop_details"] == {"type": "refusal", "category": "cyber"}


def broken(change):
    events = events_for(response("tool_use", tool_use("toolu_1", "get_pods",
                                                      {"namespace": "prod"})))
    change(events)
    return encode(events)


@pytest.mark.parametrize("change, kind, words", [
    (lambda e: e.pop(), "incomplete_stream", "before message_stop"),
    (lambda e: e.__setitem__(slice(-3, None), []), "incomplete_stream", "before message_stop"),
    (lambda e: e[3][1]["delta"].update(partial_json='{"namespace": "pr'), "invalid_tool_input",
     "not valid JSON"),
    (lambda e: e.insert(-1, error_event()), "overloaded_error", "Overloaded"),
    (lambda e: e.pop(0), "invalid_response", "before message_start"),
    (lambda e: e.insert(1, e[0]), "invalid_response", "second one"),
    (lambda e: e[1][1].update(index=3), "invalid_response", "while 0 blocks exist"),
    (lambda e: e.pop(-3), "invalid_response", "still open"),
    (lambda e: e.append(e[1]), "invalid_response", "after message_stop"),
    (lambda e: e.insert(2, ("content_block_delta", {"index": 0})), "invalid_response",
     "malformed"),
])
def test_a_broken_stream_is_a_stream_error(change, kind, words):
    with pytest.raises(StreamError) as caught:
        assemble(broken(change), 5)
    assert caught.value.error_type == kind and words in caught.value.message


def test_bytes_that_are_not_utf8_and_data_that_is_not_json():
    with pytest.raises(StreamError, match="not UTF-8"):
        EventDecoder().feed(b"event: ping\ndata: \xff\xfe\n\n")
    with pytest.raises(StreamError, match="not JSON"):
        MessageAssembler().apply("message_start", "{nope")


def test_self_hosted_streams_bare_starts_late_stops_no_stop_reason_and_unnamed_errors():
    # llama-server: a tool_use starts without input, every block stops at the end; Ollama: no
    # stop_reason in message_delta and no usage in message_start
    events = [("message_start", {"type": "message_start", "message": {
                  "id": "m", "type": "message", "role": "assistant", "model": "local",
                  "content": []}}),
              ("content_block_start", {"index": 0, "content_block": {"type": "text"}}),
              ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
              ("content_block_start", {"index": 1, "content_block": {
                  "type": "tool_use", "id": "call_1", "name": "get_pods"}}),
              ("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta",
                                                             "partial_json": '{"namespace"'}}),
              ("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta",
                                                             "partial_json": ': "prod"}'}}),
              ("content_block_stop", {"index": 0}), ("content_block_stop", {"index": 1}),
              ("message_delta", {"usage": {"output_tokens": 9}}), ("message_stop", {})]
    message, _ = assemble(encode(events), 5)
    assert message["content"] == [{"type": "text", "text": "Hi"}, tool_use(
        "call_1", "get_pods", {"namespace": "prod"})]
    assert "stop_reason" not in message and message["usage"] == {"output_tokens": 9}
    assembler = MessageAssembler()
    with pytest.raises(StreamError) as caught:
        assembler.apply(None, json.dumps({"error": {"code": 500, "type": "server_error",
                                                    "message": "slot gone"}}))
    assert (caught.value.error_type, caught.value.message) == ("server_error", "slot gone")
