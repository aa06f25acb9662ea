"""Seed 003 decoded projections (S1, S2, T1–T8) through the Part-1 normalizers.

Expected observation lists are written out by hand from the seed's JSON, so a change in
normalization shows up as a precise diff.  Local labels ({"local": ...}) are application
labels, not natives: callers must not feed them; if they do, the result is ``unknown``.
"""

from __future__ import annotations

import pytest

from tracestore.errors import InputError, WireError
from tracestore.providers import (PROVIDER_NAMES, Observation as O, bedrock_native_from_message,
                                  make_normalizer, normalize_all)

TEXT1 = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "
TEXT2 = "It is closed Thursday."

S1_CREATED = {"type": "response.created", "sequence_number": 0,
              "response": {"id": "resp_s1", "status": "in_progress"}}
S1_DELTA1 = {"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_s1",
             "output_index": 0, "content_index": 0, "delta": TEXT1}
S1_DELTA2 = {"type": "response.output_text.delta", "sequence_number": 5, "item_id": "msg_s1",
             "output_index": 0, "content_index": 0, "delta": TEXT2}
S1_DONE = {"type": "response.output_text.done", "sequence_number": 6, "item_id": "msg_s1",
           "output_index": 0, "content_index": 0, "text": TEXT1 + TEXT2}
S1_COMPLETED = {"type": "response.completed", "sequence_number": 9, "response": {
    "id": "resp_s1", "status": "completed", "output": [{
        "type": "message", "id": "msg_s1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": TEXT1 + TEXT2}]}]}}

S2_DONE = {"type": "response.output_text.done", "sequence_number": 6, "item_id": "msg_s1",
           "output_index": 0, "content_index": 0, "text": TEXT1}
S2_FAILED = {"type": "response.failed", "sequence_number": 9, "response": {
    "id": "resp_s1", "status": "failed",
    "error": {"code": "server_error", "message": "Synthetic failure"}}}

MSG_START = {"messageStart": {"role": "assistant"}}
DELTA1 = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": TEXT1}}}
DELTA2 = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": TEXT2}}}
BLOCK_STOP = {"contentBlockStop": {"contentBlockIndex": 0}}
END_TURN = {"messageStop": {"stopReason": "end_turn"}}
METADATA = {"metadata": {"usage": {"inputTokens": 30, "outputTokens": 20, "totalTokens": 50},
                         "metrics": {"latencyMs": 900}}}
STREAM_ERROR = {"modelStreamErrorException": {"message": "Synthetic stream failure"}}
MAX_TOKENS = {"messageStop": {"stopReason": "max_tokens"}}
TOOL_START = {"contentBlockStart": {"contentBlockIndex": 0, "start": {
    "toolUse": {"toolUseId": "tool_synthetic", "name": "unexpected_lookup"}}}}
T5_DELTA = {"contentBlockDelta": {"contentBlockIndex": 0,
                                  "delta": {"text": "The desk opens Thursday."}}}

OBS_START = [O("message_start", "messageStart")]
OBS_D1 = [O("text_delta", "contentBlockDelta", block=0, text=TEXT1)]
OBS_D2 = [O("text_delta", "contentBlockDelta", block=0, text=TEXT2)]
OBS_STOP = [O("block_stop", "contentBlockStop", block=0, block_type="text")]
OBS_END_TURN = [O("terminal", "messageStop", stop_reason="end_turn")]
OBS_META = [O("usage", "metadata", usage={"inputTokens": 30, "outputTokens": 20, "totalTokens": 50})]


def test_s1_normal_source() -> None:
    got = normalize_all("openai-responses", [S1_CREATED, S1_DELTA1, S1_DELTA2, S1_DONE, S1_COMPLETED])
    assert got == [
        [O("message_start", "response.created", sequence=0)],
        [O("text_delta", "response.output_text.delta", block=0, text=TEXT1, sequence=4)],
        [O("text_delta", "response.output_text.delta", block=0, text=TEXT2, sequence=5)],
        [O("final_text", "response.output_text.done", block=0, text=TEXT1 + TEXT2, sequence=6)],
        [O("final_text", "response.completed", block=0, text=TEXT1 + TEXT2, sequence=9),
         O("terminal", "response.completed", status="completed", sequence=9)],
    ]
    # final_text is agreement evidence: the deltas alone make the answer, once.
    deltas = "".join(o.text or "" for obs in got for o in obs if o.kind == "text_delta")
    assert deltas == TEXT1 + TEXT2


def test_s2_text_closure_then_failure() -> None:
    got = normalize_all("openai-responses", [S1_CREATED, S1_DELTA1, S2_DONE, S2_FAILED])
    assert got[2:] == [
        [O("final_text", "response.output_text.done", block=0, text=TEXT1, sequence=6)],
        [O("terminal", "response.failed", status="failed", error_code="server_error",
           message="Synthetic failure", sequence=9)],
    ]


def test_s2_variants_incomplete_and_stream_error() -> None:
    incomplete = {"type": "response.incomplete", "sequence_number": 9, "response": {
        "id": "resp_s1", "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"}}}
    error = {"type": "error", "sequence_number": 7,
             "error": {"type": "server_error", "code": None, "message": "boom"}}
    flat_error = {"type": "error", "sequence_number": 8, "code": "rate_limit_exceeded",
                  "message": "slow down", "param": None}
    assert normalize_all("openai-responses", [incomplete, error, flat_error]) == [
        [O("terminal", "response.incomplete", stop_reason="max_output_tokens",
           status="incomplete", sequence=9)],
        [O("error", "error", error_code="server_error", message="boom", sequence=7)],
        [O("error", "error", error_code="rate_limit_exceeded", message="slow down", sequence=8)],
    ]


def test_t1_normal_target() -> None:
    got = normalize_all("bedrock-converse-stream",
                        [MSG_START, DELTA1, DELTA2, BLOCK_STOP, END_TURN, METADATA])
    assert got == [OBS_START, OBS_D1, OBS_D2, OBS_STOP, OBS_END_TURN, OBS_META]


def test_t2_stream_exception_after_block_stop() -> None:
    got = normalize_all("bedrock-converse-stream", [MSG_START, DELTA1, BLOCK_STOP, STREAM_ERROR])
    assert got == [OBS_START, OBS_D1, OBS_STOP, [
        O("error", "modelStreamErrorException", error_code="modelStreamErrorException",
          message="Synthetic stream failure")]]


def test_t3_max_tokens() -> None:
    got = normalize_all("bedrock-converse-stream", [MSG_START, DELTA1, BLOCK_STOP, MAX_TOKENS, METADATA])
    assert got == [OBS_START, OBS_D1, OBS_STOP,
                   [O("terminal", "messageStop", stop_reason="max_tokens")], OBS_META]


def test_t4_eof_without_message_stop_has_no_terminal() -> None:
    got = normalize_all("bedrock-converse-stream", [MSG_START, DELTA1])
    assert got == [OBS_START, OBS_D1]
    assert not any(o.kind == "terminal" for obs in got for o in obs)


def test_t5_rejected_meaning_is_still_a_normal_native_end() -> None:
    got = normalize_all("bedrock-converse-stream", [MSG_START, T5_DELTA, BLOCK_STOP, END_TURN, METADATA])
    assert got[1] == [O("text_delta", "contentBlockDelta", block=0, text="The desk opens Thursday.")]
    assert got[3:] == [OBS_END_TURN, OBS_META]


def test_t6_tool_use_block_start() -> None:
    got = normalize_all("bedrock-converse-stream", [MSG_START, TOOL_START])
    assert got == [OBS_START, [O("tool_call_start", "contentBlockStart", block=0, block_type="tool_use",
                                 tool_call_id="tool_synthetic", tool_name="unexpected_lookup")]]


def test_t7_and_t8_are_plain_t1_sequences_per_attempt() -> None:
    # Stop / retry are local facts; each attempt has its own normalizer and sees plain T1.
    old, new = make_normalizer("bedrock-converse-stream"), make_normalizer("bedrock-converse-stream")
    assert old.feed(DELTA1) == OBS_D1
    assert [new.feed(n) for n in (MSG_START, DELTA1, DELTA2, BLOCK_STOP, END_TURN, METADATA)] == [
        OBS_START, OBS_D1, OBS_D2, OBS_STOP, OBS_END_TURN, OBS_META]
    assert old.feed(DELTA2) == OBS_D2
    assert old.feed(END_TURN) == OBS_END_TURN


def test_local_labels_are_not_natives() -> None:
    assert normalize_all("bedrock-converse-stream", [{"local": "drain", "outcome": "clean"}]) == [
        [O("unknown", "<not-a-union-member>")]]
    assert normalize_all("openai-responses", [{"local": "stop"}]) == [[O("unknown", "<untyped>")]]


@pytest.mark.parametrize("member", ["internalServerException", "throttlingException",
                                    "validationException", "serviceUnavailableException",
                                    "someFutureException"])
def test_every_exception_member_is_an_error(member: str) -> None:
    assert normalize_all("bedrock-converse-stream", [{member: {"message": "m", "p": "abc"}}]) == [
        [O("error", member, error_code=member, message="m")]]


def test_bedrock_delta_variants() -> None:
    natives = [
        {"contentBlockStart": {"contentBlockIndex": 1, "p": "ab", "start": {"toolUse": {
            "name": "get_weather", "toolUseId": "tu_1", "type": "tool_use"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": ""}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"a\":"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "1}"}}}},
        {"contentBlockStop": {"contentBlockIndex": 1, "p": "x"}},
        {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"reasoningContent": {"text": "hm"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"reasoningContent": {"signature": "SIG"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 3, "delta": {"reasoningContent": {"redactedContent": "QQ=="}}}},
        {"contentBlockDelta": {"contentBlockIndex": 4, "delta": {"citation": {"title": "t"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 4, "delta": {"hologram": {}}}},
        {"metadata": {"metrics": {"latencyMs": 1}}},
        {"futureEvent": {}},
        "not a dict",
    ]
    assert normalize_all("bedrock-converse-stream", natives) == [
        [O("tool_call_start", "contentBlockStart", block=1, block_type="tool_use",
           tool_call_id="tu_1", tool_name="get_weather")],
        [O("tool_call_delta", "contentBlockDelta", block=1, tool_call_id="tu_1",
           tool_name="get_weather", arguments="")],
        [O("tool_call_delta", "contentBlockDelta", block=1, tool_call_id="tu_1",
           tool_name="get_weather", arguments="{\"a\":")],
        [O("tool_call_delta", "contentBlockDelta", block=1, tool_call_id="tu_1",
           tool_name="get_weather", arguments="1}")],
        [O("tool_call_done", "contentBlockStop", block=1, tool_call_id="tu_1",
           tool_name="get_weather", arguments="{\"a\":1}"),
         O("block_stop", "contentBlockStop", block=1, block_type="tool_use")],
        [O("reasoning_delta", "contentBlockDelta", block=2, text="hm")],
        [O("raw", "contentBlockDelta", block=2, block_type="reasoning", signature="SIG")],
        [O("raw", "contentBlockDelta", block=3, block_type="redacted_reasoning")],
        [O("raw", "contentBlockDelta", block=4)],
        [O("unknown", "contentBlockDelta", block=4)],
        [O("usage", "metadata")],
        [O("unknown", "futureEvent")],
        [O("unknown", "<not-a-union-member>")],
    ]


def test_bedrock_native_from_message() -> None:
    event = bedrock_native_from_message(
        {":event-type": "contentBlockDelta", ":content-type": "application/json",
         ":message-type": "event"},
        b'{"contentBlockIndex":0,"delta":{"text":"hi"},"p":"abc"}')
    assert event == {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "hi"}, "p": "abc"}}
    exc = bedrock_native_from_message(
        {":message-type": "exception", ":exception-type": "throttlingException"}, b'{"message":"slow"}')
    assert exc == {"throttlingException": {"message": "slow"}}
    err = bedrock_native_from_message(
        {":message-type": "error", ":error-code": "internal-error",
         ":error-message": "An unknown error occurred."}, b"")
    assert err == {"error": {"code": "internal-error", "message": "An unknown error occurred."}}
    assert normalize_all("bedrock-converse-stream", [err]) == [
        [O("error", "error", error_code="internal-error", message="An unknown error occurred.")]]
    with pytest.raises(WireError) as info:
        bedrock_native_from_message({":message-type": "event", ":event-type": "x"}, b"{bad", offset=7)
    assert info.value.code == "invalid_json" and info.value.offset == 7
    with pytest.raises(WireError) as info:
        bedrock_native_from_message({":message-type": "event", ":event-type": "x"}, b'{"a":1,"a":2}')
    assert info.value.code == "invalid_json"


def test_openai_responses_tool_call_and_lifecycle() -> None:
    natives = [
        {"type": "response.in_progress", "sequence_number": 1},
        {"type": "response.output_item.added", "output_index": 0, "item": {
            "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_capital",
            "arguments": "", "status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0,
         "delta": "{\""},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0,
         "arguments": "{\"country\":\"France\"}"},
        {"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call"}},
        {"type": "response.content_part.added", "output_index": 1},
        {"type": "response.reasoning_summary_text.delta", "output_index": 1, "delta": "think"},
        {"type": "response.future.thing"},
    ]
    assert normalize_all("openai-responses", natives) == [
        [O("keepalive", "response.in_progress", sequence=1)],
        [O("tool_call_start", "response.output_item.added", block=0, block_type="tool_use",
           tool_call_id="call_1", tool_name="get_capital")],
        [O("tool_call_delta", "response.function_call_arguments.delta", block=0,
           tool_call_id="call_1", tool_name="get_capital", arguments="{\"")],
        [O("tool_call_done", "response.function_call_arguments.done", block=0,
           tool_call_id="call_1", tool_name="get_capital", arguments="{\"country\":\"France\"}")],
        [O("block_stop", "response.output_item.done", block=0, block_type="tool_use")],
        [O("raw", "response.content_part.added", block=1)],
        [O("reasoning_delta", "response.reasoning_summary_text.delta", block=1, text="think")],
        [O("unknown", "response.future.thing")],
    ]


def test_registry() -> None:
    with pytest.raises(InputError) as info:
        make_normalizer("nope")
    assert info.value.code == "unknown_provider"
    assert PROVIDER_NAMES == ("openai-responses", "openai-chat", "anthropic-messages",
                              "bedrock-converse-stream", "gemini", "xai", "ollama", "app-frames",
                              "faq-endpoint", "openai-realtime", "gemini-live", "cohere-v2")
