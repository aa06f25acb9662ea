"""Issue 11, items 1–4: decisions that hold on every real stream.

Every reasoning form of every provider holds under the text profile; inline ``<think>``
text is held unless the profile allows it; each surface's documented normal ending is
normal; an empty answer with a normal ending is never released.  Real captures are judged
with a rule that accepts ANY text (one empty pattern), so only the profile can hold them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from conftest import planned_real
from tracestore.events import StoredEvent
from tracestore.projections import decide_release, project_attempt
from tracestore.projections import reasons as R
from tracestore.projections.attempt import start_fold
from tracestore.projections.profiles import OLLAMA_TEXT
from tracestore.projections.release import ReleaseJudge
from tracestore.ingest.replay import parse_scenario, preview_replay

ANY_TEXT = {"answer_patterns": [""]}
RELEASED = ("released", (R.NORMAL_NATIVE_ENDING, R.CLEAN_DRAIN, R.SEMANTIC_ACCEPTED))


ingested = planned_real


def replayed(api: str, natives: list[Any], drain: str = "clean",
             task: Any = ANY_TEXT) -> list[StoredEvent]:
    steps: list[dict[str, Any]] = [{"open": "r", "attempt": "a", "api": api}]
    steps += [{"reader": "r", "event": n} for n in natives]
    steps.append({"reader": "r", "local": "drain", "outcome": drain})
    return preview_replay(parse_scenario({"trace": "t", "task": task, "steps": steps}))[1]


def verdict(events: list[StoredEvent]) -> tuple[str, tuple[str, ...]]:
    d = decide_release(events, "a")
    assert (d.answer is not None) == d.eligible
    return d.status, d.reasons


# -- item 1: reasoning is never released as text ------------------------------------------

@pytest.mark.parametrize("capture, native, detail", [
    ("bedrock/claude-3-7-redacted-thinking.bin", "contentBlockDelta", "redacted_reasoning"),
    ("bedrock/claude-sonnet-4-thinking.bin", "contentBlockDelta", "reasoning"),
    ("bedrock/gpt-oss-empty-text-delta.bin", "contentBlockDelta", "reasoning"),
    ("anthropic/redacted-thinking.sse", "content_block_start", "redacted_reasoning"),
    ("anthropic/thinking-signature.sse", "content_block_start", "reasoning"),
    ("openai-responses/reasoning-summary-o3-mini.sse", "response.output_item.added",
     "reasoning"),
    ("openai-chat/deepseek-reasoning-content.sse", "chat.completion.chunk", "reasoning"),
    ("gemini/sse-thinking.sse", "text", "reasoning"),
    ("gemini/jsonarray-thinking-text.json", "text", "reasoning"),
    ("xai/chat-reasoning-text.chunks.txt", "chat.completion.chunk", "reasoning"),
])
def test_real_reasoning_is_held_under_the_text_profile(capture: str, native: str,
                                                       detail: str) -> None:
    events = ingested(capture)
    assert verdict(events) == ("held", (R.NON_TEXT_CONTENT,))
    first = decide_release(events, "a")
    anomaly = next(a for a in project_attempt(events, "a").anomalies
                   if a.position == first.decided_at_position)
    assert (anomaly.code, anomaly.native_type, anomaly.detail) == (
        R.NON_TEXT_CONTENT, native, detail)


def _bedrock_text(*reasoning: dict[str, Any]) -> list[Any]:
    return [{"messageStart": {"role": "assistant"}},
            *({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": r}}}
              for r in reasoning),
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": "Hello."}}},
            {"contentBlockStop": {"contentBlockIndex": 1}},
            {"messageStop": {"stopReason": "end_turn"}}]


@pytest.mark.parametrize("api, natives", [
    ("bedrock-converse-stream", _bedrock_text({"redactedContent": "ZW5jcnlwdGVk"})),
    ("bedrock-converse-stream", _bedrock_text({"signature": "c2ln"})),
    ("anthropic-messages", [  # a signature delta on its own still belongs to reasoning
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "c2ln"}},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "text_delta", "text": "Hello."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 2}},
        {"type": "message_stop"}]),
    ("gemini", [  # Interactions: a thought step with only a signature
        {"event_type": "interaction.created"},
        {"event_type": "step.delta", "index": 0,
         "delta": {"type": "thought_signature", "signature": "c2ln"}},
        {"event_type": "step.start", "index": 1, "step": {"type": "model_output"}},
        {"event_type": "step.delta", "index": 1, "delta": {"type": "text", "text": "Hello."}},
        {"event_type": "step.stop", "index": 1},
        {"event_type": "interaction.completed", "interaction": {"status": "completed"}}]),
    ("ollama", [
        {"model": "qwen3", "message": {"role": "assistant", "thinking": "Hmm."},
         "done": False},
        {"model": "qwen3", "message": {"role": "assistant", "content": "Hello."},
         "done": False},
        {"model": "qwen3", "message": {"role": "assistant", "content": ""}, "done": True,
         "done_reason": "stop"}]),
    ("xai", [
        {"object": "chat.completion.chunk", "model": "grok-3-mini", "choices": [
            {"index": 0, "delta": {"role": "assistant", "reasoning_content": "Hmm."}}]},
        {"object": "chat.completion.chunk", "model": "grok-3-mini", "choices": [
            {"index": 0, "delta": {"content": "Hello."}, "finish_reason": "stop"}]}]),
])
def test_every_reasoning_form_is_held(api: str, natives: list[Any]) -> None:
    assert verdict(replayed(api, natives)) == ("held", (R.NON_TEXT_CONTENT,))


# -- item 2: inline <think> text ----------------------------------------------------------

def test_inline_think_tags_are_held_by_default() -> None:
    events = ingested("ollama/generate-qwen3-think-tags.ndjson")
    assert verdict(events) == ("held", (R.INLINE_REASONING_TEXT,))
    d = decide_release(events, "a")
    assert d.decided_at_position == 4  # trace, start, capture, then the first frame
    [anomaly] = [a for a in project_attempt(events, "a").anomalies]
    assert (anomaly.code, anomaly.detail) == (R.INLINE_REASONING_TEXT, "<think>")


def _generate(*pieces: str) -> list[Any]:
    lines: list[Any] = [{"model": "m", "response": p, "done": False} for p in pieces]
    return lines + [{"model": "m", "response": "", "done": True, "done_reason": "stop"}]


def test_a_tag_split_across_deltas_is_found() -> None:
    events = replayed("ollama", _generate("Answer: <thi", "nk>", " x"))
    assert verdict(events) == ("held", (R.INLINE_REASONING_TEXT,))


def test_text_that_merely_mentions_thinking_is_released() -> None:
    events = replayed("ollama", _generate("I think ", "<b>so</b>."))
    assert verdict(events) == RELEASED


def test_a_profile_may_allow_inline_tags() -> None:
    events = replayed("ollama", _generate("<think>hm</think>", "Hello."))
    fold, trace = start_fold(events, "a")
    fold.profile = dataclasses.replace(OLLAMA_TEXT, inline_reasoning_tags_allowed=True)
    judge = ReleaseJudge(fold, trace)
    for stored in events:
        judge.feed(stored)
    assert (judge.decision().status, judge.decision().answer) == (
        "released", "<think>hm</think>Hello.")


# -- item 3: each surface's documented normal ending --------------------------------------

INTERACTIONS = [
    {"event_type": "interaction.created", "interaction": {"id": "i1"}},
    {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
    {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Hello."}},
    {"event_type": "step.stop", "index": 0},
]
XAI_RESPONSES = [
    {"type": "response.created", "sequence_number": 0,
     "response": {"id": "r1", "model": "grok-4", "status": "in_progress"}},
    {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
     "item": {"type": "message", "id": "m1"}},
    {"type": "response.output_text.delta", "sequence_number": 2, "output_index": 0,
     "item_id": "m1", "delta": "Hello."},
    {"type": "response.output_text.done", "sequence_number": 3, "output_index": 0,
     "item_id": "m1", "text": "Hello."},
]
XAI_MESSAGES = [
    {"type": "message_start", "message": {"id": "msg1", "model": "grok-4",
                                          "usage": {"input_tokens": 5}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hello."}},
    {"type": "content_block_stop", "index": 0},
]


def _responses_end(status: str, **extra: Any) -> dict[str, Any]:
    return {"type": f"response.{status}", "sequence_number": 9, "response": {
        "id": "r1", "model": "grok-4", "status": status, **extra, "output": [
            {"type": "message", "id": "m1", "content": [
                {"type": "output_text", "text": "Hello."}]}]}}


def _messages_end(reason: str) -> list[Any]:
    return [{"type": "message_delta", "delta": {"stop_reason": reason},
             "usage": {"output_tokens": 2}}, {"type": "message_stop"}]


@pytest.mark.parametrize("api, natives, expected", [
    ("gemini", INTERACTIONS + [{"event_type": "interaction.completed", "interaction": {
        "id": "i1", "status": "completed", "usage": {"total_output_tokens": 2}}}], RELEASED),
    ("gemini", INTERACTIONS + [{"event_type": "interaction.completed", "interaction": {
        "id": "i1", "status": "incomplete"}}], ("limited", (R.NATIVE_LIMIT_REACHED,))),
    ("gemini", INTERACTIONS + [{"event_type": "interaction.completed", "interaction": {
        "id": "i1", "status": "requires_action"}}], ("held", (R.TOOL_USE_NOT_ALLOWED,))),
    ("gemini", INTERACTIONS + [{"event_type": "interaction.completed", "interaction": {
        "id": "i1", "status": "cancelled"}}], ("held", (R.UNKNOWN_STOP_REASON,))),
    ("gemini", INTERACTIONS + [{"event_type": "error", "error": {
        "code": "overloaded", "message": "busy"}}], ("failed", (R.NATIVE_FAILURE,))),
    ("xai", XAI_RESPONSES + [_responses_end("completed", usage={"output_tokens": 2})],
     RELEASED),
    ("xai", XAI_RESPONSES + [_responses_end(
        "incomplete", incomplete_details={"reason": "max_output_tokens"})],
     ("limited", (R.NATIVE_LIMIT_REACHED,))),
    ("xai", XAI_MESSAGES + _messages_end("end_turn"), RELEASED),
    ("xai", XAI_MESSAGES + _messages_end("max_tokens"), ("limited", (R.NATIVE_LIMIT_REACHED,))),
    ("xai", XAI_MESSAGES + _messages_end("tool_use"), ("held", (R.TOOL_USE_NOT_ALLOWED,))),
])
def test_documented_endings_per_surface(api: str, natives: list[Any],
                                        expected: tuple[str, tuple[str, ...]]) -> None:
    assert verdict(replayed(api, natives)) == expected


# -- item 4: an empty answer is never released --------------------------------------------

@pytest.mark.parametrize("texts", [[], [""], ["  ", "\n"]])
def test_an_empty_candidate_with_a_normal_ending_is_held(texts: list[str]) -> None:
    natives: list[Any] = [{"messageStart": {"role": "assistant"}}]
    natives += [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": t}}}
                for t in texts]
    natives += [{"messageStop": {"stopReason": "end_turn"}},
                {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 0}}}]
    events = replayed("bedrock-converse-stream", natives)
    assert verdict(events) == ("held", (R.EMPTY_ANSWER,))
    assert decide_release(events, "a").decided_at_position == events[-1].position - 1


def test_empty_is_judged_before_the_missing_rule() -> None:
    events = replayed("ollama", _generate(""), task=None)
    assert verdict(events) == ("held", (R.EMPTY_ANSWER,))
