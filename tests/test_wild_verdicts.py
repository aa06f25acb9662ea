"""Issue 19 wild corpus: verdicts that were wrong on public recordings (fixtures/wild/),
each decided in-process as ``ingest --provider auto`` + ``release`` under an accept-any-text
rule (the helper of tools/real_decisions.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import load_tool

from tracestore.errors import TracestoreError
from tracestore.projections import decide_release

ROOT = Path(__file__).resolve().parents[1]
WILD = ROOT / "fixtures" / "wild"


def _tool():  # noqa: ANN202 - tools/real_decisions.py as a module
    return load_tool("real_decisions")


TOOL = _tool()


def decide(name: str) -> tuple[str, str, list[str]]:
    api, events = TOOL._events(WILD / name)
    d = decide_release(events, "a")
    return api, d.status, list(d.reasons)


def refusal(name: str) -> str:
    with pytest.raises(TracestoreError) as info:
        TOOL._events(WILD / name)
    return info.value.code


def test_openrouter_encrypted_reasoning_details_are_held() -> None:
    api, status, reasons = decide("openrouter/pyd__openrouter_stream_with_reasoning.sse")
    assert (api, status) == ("openai-chat", "held")
    assert reasons[0] == "non_text_content"


@pytest.mark.parametrize("name", [
    "openrouter/pyd__openrouter_web_search_annotations_stream.sse",
    "openrouter/pyd__openrouter_web_search_tool_usage_stream.sse",
])
def test_openrouter_repeated_finish_chunk_is_one_ending(name: str) -> None:
    assert decide(name) == ("openai-chat", "released",
                            ["normal_native_ending", "clean_drain", "semantic_accepted"])


def _chat_stream(*chunks: str) -> bytes:
    return b"".join(b"data: " + c.encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_a_repeated_finish_with_new_content_is_still_a_second_terminal() -> None:
    from tracestore.events import StoredEvent
    from tracestore.ingest import plan_ingest

    def chunk(content: str, finish: str | None) -> str:
        fin = "null" if finish is None else f'"{finish}"'
        return ('{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":'
                f'"assistant","content":"{content}"}},"finish_reason":{fin}}}]}}')
    body = _chat_stream(chunk("one", None), chunk("", "stop"), chunk("two", "stop"))
    plan = plan_ingest(body, filename="x.sse", attempt_id="a", task=TOOL.ACCEPT_ANY_TEXT)
    events = [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1, TOOL._STAMP, n.trace_id,
                          n.event, "") for i, n in enumerate(plan.events)]
    d = decide_release(events, "a")
    assert d.status == "held" and "duplicate_terminal" in d.reasons


@pytest.mark.parametrize("name", [
    "openai-other/ddt__openai_completions_post_1dd33b11.sse",   # legacy /v1/completions
    "openai-other/ddt__openai_completions_post_8af08079.sse",
    "bedrock-invoke/ddt__amazon_invoke_stream.bin",             # InvokeModelWithResponseStream
    "bedrock-invoke/ddt__anthropic_invoke_stream.bin",
    "bedrock-invoke/ddt__cohere_invoke_stream_single_output.bin",
    "bedrock-invoke/ddt__meta_invoke_stream.bin",
    "bedrock-other/ddt__agent_invoke.bin",                      # InvokeAgent
    "bedrock-other/ddt__agent_invoke_trace_disabled.bin",
    "cohere/llmcoh__prompt.ndjson",                             # Cohere v1 chat stream
])
def test_apis_tracestore_does_not_decode_are_refused_not_mislabelled(name: str) -> None:
    assert refusal(name) == "unknown_provider"


def _anthropic_error_stream(error_type: str) -> bytes:
    start = ('{"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
             '"model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":1,'
             '"output_tokens":0}}}')
    err = f'{{"type":"error","error":{{"type":"{error_type}","message":"x"}}}}'
    return (f"event: message_start\ndata: {start}\n\n"
            f"event: error\ndata: {err}\n\n").encode()


@pytest.mark.parametrize("error_type, retryable", [
    ("authentication_error", False), ("permission_error", False),
    ("invalid_request_error", False), ("not_found_error", False),
    ("overloaded_error", True), ("rate_limit_error", True), ("api_error", True),
])
def test_envelope_retryability_follows_the_error_type(error_type: str, retryable: bool) -> None:
    from tracestore.projections.envelope import SORRY, project_envelope
    from tracestore.events import StoredEvent
    from tracestore.ingest import plan_ingest
    from tracestore.projections.release import decide_with_view

    plan = plan_ingest(_anthropic_error_stream(error_type), filename="x.sse", attempt_id="a",
                       task=TOOL.ACCEPT_ANY_TEXT)
    events = [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1, TOOL._STAMP, n.trace_id,
                          n.event, "") for i, n in enumerate(plan.events)]
    decision, view = decide_with_view(events, "a")
    assert decision.status == "failed"
    assert project_envelope(decision, view).to_dict() == {
        "schema_version": 2, "state": "error", "text": SORRY, "code": "stream_error",
        "retryable": retryable, "result": None}


ERROR_BODIES = sorted(p.relative_to(WILD).as_posix() for p in (WILD / "http-error").iterdir())


@pytest.mark.parametrize("name", ERROR_BODIES)
def test_a_whole_body_json_error_is_an_error_with_its_envelope(name: str) -> None:
    from tracestore.projections.envelope import SORRY, project_envelope
    from tracestore.projections.release import decide_with_view

    api, events = TOOL._events(WILD / name)
    vendor = name.split("-", 2)[-1] if name.startswith("http-error/mira") else "openai"
    expected = ("anthropic-messages" if "anthropic" in vendor
                else "gemini" if "gemini" in vendor else "openai-chat")
    assert api == expected
    decision, view = decide_with_view(events, "a")
    assert decision.status == "failed"
    # every one is a bad key or an unknown model: a retry cannot fix it
    assert project_envelope(decision, view).to_dict() == {
        "schema_version": 2, "state": "error", "text": SORRY, "code": "stream_error",
        "retryable": False, "result": None}


def test_a_pretty_printed_non_error_object_is_still_refused() -> None:
    from tracestore.ingest import plan_ingest
    with pytest.raises(TracestoreError) as info:
        plan_ingest(b'{\n  "hello": "world"\n}\n', filename="x.json", attempt_id="a",
                    task=TOOL.ACCEPT_ANY_TEXT)
    assert info.value.code == "invalid_json"


def test_done_without_finish_reason_says_the_end_marker_arrived() -> None:
    from tracestore.projections import project_attempt
    api, events = TOOL._events(WILD / "other-compatible/pyd__snowflake_model_streaming.sse")
    d = decide_release(events, "a")
    assert (api, d.status, list(d.reasons)[:2]) == ("openai-chat", "interrupted",
                                                    ["no_native_terminal", "drain_eof"])
    drain = project_attempt(events, "a").drain
    assert drain.outcome == "eof"
    assert drain.detail.startswith("the dialect's end marker [DONE] arrived (frame ")
    assert drain.detail.endswith("but no native terminal (finish_reason) came")


@pytest.mark.parametrize("name", [
    "mistral/pyd__mistral_model_thinking_part_iter.sse",  # delta.content: [{"type": "thinking"}]
    "vercel-chunks/mistral/vercel__mistral-reasoning.chunks.txt",  # was held empty_answer
])
def test_mistral_thinking_content_parts_are_reasoning_held(name: str) -> None:
    api, status, reasons = decide(name)
    assert (api, status, reasons[0]) == ("openai-chat", "held", "non_text_content")


def _sdk_text(name: str) -> str:
    """The answer text anthropic-python's own stream accumulator reads from a body (its
    ``accumulate_event``, what ``MessageStream.get_final_message`` uses): its text blocks."""
    anthropic_streaming = pytest.importorskip("anthropic.lib.streaming._messages")
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    from tracestore.providers.capture import read_capture

    body = (WILD / name).read_bytes()
    snapshot = None
    for frame in read_capture(body, filename=Path(name).name).frames:
        if frame.native.get("type") == "ping":
            continue
        event = construct_type(type_=RawMessageStreamEvent, value=frame.native)
        snapshot = anthropic_streaming.accumulate_event(
            event=event, current_snapshot=snapshot, json_bufs={})
    assert snapshot is not None
    return "".join(b.text for b in snapshot.content if b.type == "text")


@pytest.mark.parametrize(("name", "start"), [
    # compaction: the server's summary of the EARLIER context, sent back next request
    ("anthropic/pyd__anthropic_compaction_usage_with_cache_streaming.sse", "Hello! 👋"),
    ("vercel-chunks/anthropic/vercel__anthropic-compaction.1.chunks.txt",
     "Based on the conversation history"),
    # fallback: the server answered with another model; metadata, no content
    ("vercel-chunks/anthropic/vercel__anthropic-fallback.chunks.txt",
     "The printing press was invented by Johannes Gutenberg around 1440."),
    # the same message_start twice before any content
    ("vercel-chunks/anthropic/vercel__duplicate-message-start.chunks.txt", "Hello, World!"),
])
def test_anthropic_bodies_the_sdk_reads_as_one_text_answer_are_released(
        name: str, start: str) -> None:
    api, events = TOOL._events(WILD / name)
    d = decide_release(events, "a")
    assert (api, d.status, list(d.reasons)) == (
        "anthropic-messages", "released",
        ["normal_native_ending", "clean_drain", "semantic_accepted"])
    assert d.answer is not None and d.answer.startswith(start)
    assert d.answer == _sdk_text(name)
    if "compaction" in name:  # the summary never enters the answer
        assert "Summary of Conversation" not in d.answer and "Next step" not in d.answer
