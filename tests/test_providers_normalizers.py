"""Provider-by-provider normalizer behaviour on documented shapes, with exact outcomes."""

from __future__ import annotations

import json

import pytest

from tracestore.errors import InputError, WireError
from tracestore.providers import Observation as O, binding_digest, make_normalizer, normalize_all
from tracestore.providers.capture import detect_provider, read_capture


def feed_all(provider: str, natives: list, **options: object) -> list[list[O]]:
    normalizer = make_normalizer(provider, **options)
    return [normalizer.feed(n) for n in natives]


# -- Anthropic ----------------------------------------------------------------------------

def test_anthropic_tool_use_accumulates_string_fragments() -> None:
    got = normalize_all("anthropic-messages", [
        {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"q\": "}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"x\"}"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}},
        {"type": "message_stop"},
    ])
    assert got == [
        [O("tool_call_start", "content_block_start", block=1, block_type="tool_use",
           tool_call_id="toolu_1", tool_name="lookup")],
        [O("tool_call_delta", "content_block_delta", block=1, tool_call_id="toolu_1",
           tool_name="lookup", arguments="")],
        [O("tool_call_delta", "content_block_delta", block=1, tool_call_id="toolu_1",
           tool_name="lookup", arguments="{\"q\": ")],
        [O("keepalive", "ping")],
        [O("tool_call_delta", "content_block_delta", block=1, tool_call_id="toolu_1",
           tool_name="lookup", arguments="\"x\"}")],
        [O("tool_call_done", "content_block_stop", block=1, block_type="tool_use",
           tool_call_id="toolu_1", tool_name="lookup", arguments="{\"q\": \"x\"}"),
         O("block_stop", "content_block_stop", block=1, block_type="tool_use")],
        [O("raw", "message_delta")],
        [O("terminal", "message_stop", stop_reason="tool_use")],
    ]


def test_anthropic_thinking_signature_error_and_unknowns() -> None:
    got = normalize_all("anthropic-messages", [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "ENC"}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta", "citation": {}}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "future_delta"}},
        {"type": "content_block_start", "index": 3, "content_block": {"type": "hologram"}},
        {"type": "error", "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
         "request_id": "req_1"},
        {"type": "message_stop"},
        {"no_type": True},
    ])
    assert got == [
        [O("block_start", "content_block_start", block=0, block_type="reasoning")],
        [O("reasoning_delta", "content_block_delta", block=0, text="hmm")],
        [O("raw", "content_block_delta", block=0, block_type="reasoning", signature="SIG")],
        [O("block_stop", "content_block_stop", block=0, block_type="reasoning")],
        [O("block_start", "content_block_start", block=1, block_type="redacted_reasoning")],
        [O("raw", "content_block_delta", block=2)],
        [O("unknown", "content_block_delta", block=2)],
        [O("unknown", "content_block_start", block=3, block_type="hologram")],
        [O("error", "error", error_code="overloaded_error", message="Overloaded")],
        [O("terminal", "message_stop")],  # no message_delta: stop reason stays None
        [O("unknown", "<untyped>")],
    ]


# -- OpenAI Chat Completions ----------------------------------------------------------------

def chunk(delta: dict, finish: str | None = None, **extra: object) -> dict:
    return {"object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish}], "usage": None, **extra}


def test_chat_two_tool_calls_done_at_finish() -> None:
    got = normalize_all("openai-chat", [
        chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\":"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                               "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        chunk({}, "tool_calls"),
        {"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 1}},
        "[DONE]",
    ])
    assert got == [
        [O("message_start", "chat.completion.chunk", block=0),
         O("tool_call_start", "chat.completion.chunk", block=0, block_type="tool_use",
           tool_call_id="call_a", tool_name="f")],
        [O("tool_call_delta", "chat.completion.chunk", block=0, tool_call_id="call_a",
           tool_name="f", arguments="{\"a\":")],
        [O("tool_call_start", "chat.completion.chunk", block=0, block_type="tool_use",
           tool_call_id="call_b", tool_name="g"),
         O("tool_call_delta", "chat.completion.chunk", block=0, tool_call_id="call_b",
           tool_name="g", arguments="{}")],
        [O("tool_call_delta", "chat.completion.chunk", block=0, tool_call_id="call_a",
           tool_name="f", arguments="1}")],
        [O("tool_call_done", "chat.completion.chunk", block=0, tool_call_id="call_a",
           tool_name="f", arguments="{\"a\":1}"),
         O("tool_call_done", "chat.completion.chunk", block=0, tool_call_id="call_b",
           tool_name="g", arguments="{}"),
         O("terminal", "chat.completion.chunk", block=0, stop_reason="tool_calls")],
        [O("usage", "chat.completion.chunk", usage={"prompt_tokens": 1})],
        [O("keepalive", "[DONE]")],
    ]


def test_chat_reasoning_dialects_refusal_and_errors() -> None:
    got = normalize_all("openai-chat", [
        chunk({"role": "assistant", "content": "", "reasoning_content": "ds"}),
        chunk({"reasoning": "groq", "channel": "analysis"}),
        chunk({"content": "hi", "refusal": None}),
        chunk({"refusal": "no"}),
        {"error": {"message": "Tool call validation failed", "type": "invalid_request_error",
                   "code": "tool_use_failed", "status_code": 400}},
        {"error": {"code": 400, "message": "Token limit reached"}, "choices": [], "usage": None},
        {"error": {"message": "quota", "type": "insufficient_quota", "code": None}},
        {"something": "else"},
    ])
    assert got == [
        [O("message_start", "chat.completion.chunk", block=0),
         O("reasoning_delta", "chat.completion.chunk", block=0, text="ds")],
        [O("reasoning_delta", "chat.completion.chunk", block=0, text="groq")],
        [O("text_delta", "chat.completion.chunk", block=0, text="hi")],
        [O("text_delta", "chat.completion.chunk", block=0, block_type="refusal", text="no")],
        [O("error", "error", error_code="tool_use_failed", message="Tool call validation failed")],
        [O("error", "error", error_code="400", message="Token limit reached")],
        [O("error", "error", error_code="insufficient_quota", message="quota")],
        [O("unknown", "<not-a-chunk>")],
    ]


# -- Gemini -----------------------------------------------------------------------------------

def test_gemini_parts() -> None:
    got = normalize_all("gemini", [
        {"candidates": [{"content": {"parts": [
            {"text": "plan", "thought": True},
            {"functionCall": {"id": "fc1", "name": "f", "args": {"b": 1, "a": "é"}}, "thoughtSignature": "S1"},
            {"text": "", "thoughtSignature": "S2"},
            {"inlineData": {"mimeType": "image/png", "data": "AA=="}},
            {"mystery": 1},
        ], "role": "model"}, "index": 0}]},
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}},
        {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}},
        {"error": {"code": 500, "message": "boom"}},
        {"nothing": "here"},
    ])
    args = json.dumps({"b": 1, "a": "é"})
    assert got == [
        [O("reasoning_delta", "text", block=0, text="plan"),
         O("tool_call_start", "functionCall", block=0, block_type="tool_use", tool_call_id="fc1",
           tool_name="f", signature="S1"),
         O("tool_call_delta", "functionCall", block=0, tool_call_id="fc1", tool_name="f", arguments=args),
         O("tool_call_done", "functionCall", block=0, tool_call_id="fc1", tool_name="f",
           arguments=args, signature="S1"),
         O("raw", "text", block=0, signature="S2"),
         O("raw", "inlineData", block=0),
         O("unknown", "part", block=0)],
        [O("usage", "usageMetadata", usage={"promptTokenCount": 3}),
         O("terminal", "promptFeedback", stop_reason="SAFETY")],
        [O("error", "error", error_code="RESOURCE_EXHAUSTED", message="Resource exhausted")],
        [O("error", "error", error_code="500", message="boom")],
        [O("unknown", "<not-a-response>")],
    ]


def test_gemini_interactions_events() -> None:
    got = normalize_all("gemini", [
        {"event_type": "interaction.created", "interaction": {"id": "i1", "status": "in_progress"}},
        {"event_type": "step.start", "index": 0, "step": {"type": "thought"}},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "thought_summary", "content": {"type": "text", "text": "t"}}},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "thought_signature", "signature": "SIG"}},
        {"event_type": "step.stop", "index": 0},
        {"event_type": "step.start", "index": 1, "step": {"type": "function_call", "id": "call_1", "name": "f"}},
        {"event_type": "step.delta", "index": 1, "delta": {"type": "arguments_delta", "arguments": "{\"x\""}},
        {"event_type": "step.delta", "index": 1, "delta": {"type": "arguments_delta", "arguments": ":1}"}},
        {"event_type": "step.stop", "index": 1},
        {"event_type": "step.start", "index": 2, "step": {"type": "model_output"}},
        {"event_type": "step.delta", "index": 2, "delta": {"type": "text", "text": "Hi"}},
        {"event_type": "step.delta", "index": 2, "delta": {"type": "hologram"}},
        {"event_type": "interaction.status_update", "status": "in_progress"},
        {"event_type": "interaction.completed", "interaction": {"status": "requires_action",
                                                                 "usage": {"total_output_tokens": 5}}},
        {"event_type": "error", "error": {"code": "rate_limited", "message": "slow"}},
        {"event_type": "something.new"},
        "[DONE]",
    ])
    assert got == [
        [O("message_start", "interaction.created")],
        [O("block_start", "step.start", block=0, block_type="reasoning")],
        [O("reasoning_delta", "step.delta", block=0, text="t")],
        [O("raw", "step.delta", block=0, block_type="reasoning", signature="SIG")],
        [O("block_stop", "step.stop", block=0)],
        [O("tool_call_start", "step.start", block=1, block_type="tool_use", tool_call_id="call_1", tool_name="f")],
        [O("tool_call_delta", "step.delta", block=1, tool_call_id="call_1", tool_name="f", arguments="{\"x\"")],
        [O("tool_call_delta", "step.delta", block=1, tool_call_id="call_1", tool_name="f", arguments=":1}")],
        [O("tool_call_done", "step.stop", block=1, tool_call_id="call_1", tool_name="f", arguments="{\"x\":1}"),
         O("block_stop", "step.stop", block=1)],
        [O("block_start", "step.start", block=2, block_type="text")],
        [O("text_delta", "step.delta", block=2, text="Hi")],
        [O("unknown", "step.delta", block=2, block_type="hologram")],
        [O("keepalive", "interaction.status_update", status="in_progress")],
        [O("usage", "interaction.completed", usage={"total_output_tokens": 5}),
         O("terminal", "interaction.completed", status="requires_action")],
        [O("error", "error", error_code="rate_limited", message="slow")],
        [O("unknown", "something.new")],
        [O("keepalive", "[DONE]")],
    ]


# -- Ollama -----------------------------------------------------------------------------------

def test_ollama_chat_lines() -> None:
    got = normalize_all("ollama", [
        {"model": "m", "message": {"role": "assistant", "content": "", "thinking": "hm"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": "Hi"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get", "arguments": {"city": "Oslo"}}}]}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True,
         "eval_count": 7},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": False},
        {"error": "model runner has unexpectedly stopped"},
        {"model": "m", "created_at": "x"},
    ])
    args = json.dumps({"city": "Oslo"})
    assert got == [
        [O("reasoning_delta", "chat", text="hm")],
        [O("text_delta", "chat", text="Hi")],
        [O("tool_call_start", "chat", block_type="tool_use", tool_name="get"),
         O("tool_call_delta", "chat", tool_name="get", arguments=args),
         O("tool_call_done", "chat", tool_name="get", arguments=args)],
        # done_reason omitted (omitempty): stop_reason stays None; only counters present
        [O("usage", "chat", usage={"eval_count": 7}), O("terminal", "chat")],
        [O("raw", "chat")],
        [O("error", "error", message="model runner has unexpectedly stopped")],
        [O("unknown", "<not-an-ollama-line>")],
    ]


# -- xAI --------------------------------------------------------------------------------------

def test_xai_dispatches_by_shape() -> None:
    got = normalize_all("xai", [
        {"object": "chat.completion.chunk", "model": "grok-4", "choices": [
            {"index": 0, "delta": {"reasoning_content": "r", "role": "assistant"}}]},
        {"type": "response.output_text.delta", "output_index": 1, "delta": "resp", "sequence_number": 7},
        {"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": "anth"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
        "[DONE]",
        {"who": "knows"},
    ])
    assert got == [
        [O("message_start", "chat.completion.chunk", block=0),
         O("reasoning_delta", "chat.completion.chunk", block=0, text="r")],
        [O("text_delta", "response.output_text.delta", block=1, text="resp", sequence=7)],
        [O("reasoning_delta", "content_block_delta", text="anth")],  # xAI omits the index
        [O("error", "error", error_code="overloaded_error", message="busy")],
        [O("keepalive", "[DONE]")],
        [O("unknown", "<unrecognised-shape>")],
    ]


# -- app-frames (seed 000) ----------------------------------------------------------------------

BINDING = {"case_id": "replace-file", "request_sha256": "abc", "messages": [["user", "hi"]]}
H = binding_digest(BINDING)


def frame(seq: object, kind: str, **fields: object) -> dict:
    return {"sequence": seq, "kind": kind, "binding_sha256": fields.pop("binding", H), **fields}


def test_binding_digest_matches_seed_definition() -> None:
    import hashlib
    canonical = '{"case_id":"replace-file","messages":[["user","hi"]],"request_sha256":"abc"}'
    assert hashlib.sha256(canonical.encode()).hexdigest() == H


def test_app_frames_normal_stream() -> None:
    got = feed_all("app-frames", [
        frame(1, "content_delta", text='{"status":'), frame(2, "content_delta", text='"answered"}'),
        frame(3, "done")], expected_binding=H)
    assert got == [
        [O("text_delta", "content_delta", text='{"status":', sequence=1)],
        [O("text_delta", "content_delta", text='"answered"}', sequence=2)],
        [O("terminal", "done", status="done", sequence=3)],
    ]


def test_app_frames_gap_repeat_binding_and_after_terminal() -> None:
    got = feed_all("app-frames", [
        frame(1, "content_delta", text="a"),
        frame(3, "content_delta", text="b"),
        frame(3, "content_delta", text="c"),
        frame(4, "content_delta", text="d", binding="0" * 64),
        frame(5, "cancel", reason="controlled_local_cancel"),
        frame(6, "content_delta", text="late"),
    ], expected_binding=H)
    assert got == [
        [O("text_delta", "content_delta", text="a", sequence=1)],
        [O("error", "content_delta", error_code="sequence_gap", sequence=3,
           message="expected sequence 2, got 3"),
         O("text_delta", "content_delta", text="b", sequence=3)],
        [O("error", "content_delta", error_code="sequence_gap", sequence=3,
           message="expected sequence 4, got 3"),
         O("text_delta", "content_delta", text="c", sequence=3)],
        [O("error", "content_delta", error_code="binding_mismatch", sequence=4,
           message="frame is bound to a different request"),
         O("text_delta", "content_delta", text="d", sequence=4)],
        [O("terminal", "cancel", status="cancel", stop_reason="controlled_local_cancel", sequence=5)],
        [O("error", "content_delta", error_code="frame_after_terminal", sequence=6,
           message="frame after the stream's terminal frame"),
         O("text_delta", "content_delta", text="late", sequence=6)],
    ]


def test_app_frames_without_expected_binding_use_the_first_frame() -> None:
    got = feed_all("app-frames", [frame(1, "content_delta", text="a"),
                                  frame(2, "error", reason="controlled_local_error", binding="f" * 64),
                                  {"sequence": 3, "type": "content_delta", "binding_sha256": H, "delta": "x"},
                                  {"sequence": 4, "kind": "mystery"}, "nope"])
    assert got == [
        [O("text_delta", "content_delta", text="a", sequence=1)],
        [O("error", "error", error_code="binding_mismatch", sequence=2,
           message="frame is bound to a different request"),
         O("error", "error", error_code="controlled_local_error", message="controlled_local_error",
           sequence=2)],
        [O("error", "content_delta", error_code="frame_after_terminal", sequence=3,
           message="frame after the stream's terminal frame"),
         O("text_delta", "content_delta", text="x", sequence=3)],
        [O("unknown", "mystery")],
        [O("unknown", "<non-object>")],
    ]


def test_app_frames_capture_end_to_end() -> None:
    lines = [frame(1, "content_delta", text="héllo "), frame(2, "content_delta", text="wörld"),
             frame(3, "done")]
    data = "".join(json.dumps(f, ensure_ascii=False, separators=(",", ":")) + "\n" for f in lines).encode()
    reading = read_capture(data, expected_binding=H)
    assert (reading.provider, reading.framing, reading.terminal_seen) == ("app-frames", "ndjson", True)
    assert "".join(o.text or "" for o in reading.observations if o.kind == "text_delta") == "héllo wörld"
    assert read_capture(data, chunk_size=1, expected_binding=H) == reading
    bad = read_capture(data, expected_binding="0" * 64)
    assert [o.error_code for o in bad.observations if o.kind == "error"] == ["binding_mismatch"] * 3


# -- capture glue -----------------------------------------------------------------------------

def test_strict_json_refuses_duplicates_and_nan_with_offset() -> None:
    data = b'data: {"type":"ping"}\n\ndata: {"type":"ping","type":"ping"}\n\n'
    with pytest.raises(WireError) as info:
        read_capture(data, provider="anthropic-messages")
    assert (info.value.code, info.value.offset) == ("invalid_json", 23)
    with pytest.raises(WireError) as info:
        read_capture(b'{"done": false, "response": NaN}\n', provider="ollama")
    assert (info.value.code, info.value.offset) == ("invalid_json", 0)


def test_detect_provider_rules() -> None:
    seed_003_source = [{"type": "response.created", "sequence_number": 0, "response": {"id": "r"}},
                       {"local": "drain", "outcome": "clean"}]
    seed_003_target = [{"local": "stop"}, {"messageStart": {"role": "assistant"}}]
    assert detect_provider("json-array", [(None, n) for n in seed_003_source]) == "openai-responses"
    assert detect_provider("json-array", [(None, n) for n in seed_003_target]) == "bedrock-converse-stream"
    assert detect_provider("json-array", [(None, {"modelStreamErrorException": {"message": "m"}})]) \
        == "bedrock-converse-stream"
    assert detect_provider("aws-eventstream", []) == "bedrock-converse-stream"
    assert detect_provider("sse", [(None, "[DONE]"), ("ping", {"type": "ping"}),
                                   ("message_start", {"type": "message_start", "message": {}})]) \
        == "anthropic-messages"
    assert detect_provider("sse", [(None, {"type": "message_start",
                                           "message": {"model": "grok-4"}})]) == "xai"
    assert detect_provider("sse", [(None, {"type": "response.created",
                                           "response": {"model": "grok-4"}})]) == "xai"
    assert detect_provider("ndjson", [(None, {"error": "boom"})]) == "ollama"
    assert detect_provider("sse", [(None, {"event_type": "interaction.created"})]) == "gemini"
    with pytest.raises(InputError) as info:
        detect_provider("sse", [(None, "[DONE]"), (None, {"type": "mystery"}), (None, [1])])
    assert info.value.code == "unknown_provider"


def test_explicit_provider_overrides_detection_and_unknown_name_is_refused() -> None:
    data = b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    assert read_capture(data).provider == "openai-chat"
    assert read_capture(data, provider="xai").provider == "xai"
    with pytest.raises(InputError) as info:
        read_capture(data, provider="nope")
    assert info.value.code == "unknown_provider"


def test_truncated_capture_reports_truncation_and_no_terminal() -> None:
    data = b'event: message_start\ndata: {"type":"message_start","message":{}}\n\nevent: message_stop\ndata: {"ty'
    reading = read_capture(data)
    assert reading.truncation is not None and not reading.terminal_seen
    assert len(reading.frames) == 1
