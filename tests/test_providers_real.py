"""Every real capture, read end to end: framing, provider, native end, answer, tools, errors.

Expected values were computed by reading the files (an independent naive extraction per
provider, not this package's code) and cross-checked by hand for a few: text-basic is
"Hello"; stop-sequence ends with stop_reason ``stop_sequence`` and ``stop_sequence`` "```";
Bedrock's tool input fragments join to ``{"location": "San Francisco, CA"}``; the xAI text
answer is "Grok".  Text length/sha256 are over the ``text_delta`` texts concatenated per
block (``final_text`` is never appended).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tracestore.providers import Observation as O
from tracestore.providers.capture import read_capture
from tracestore.providers.summary import summarize

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
EMPTY_SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@dataclass(frozen=True)
class Case:
    path: str
    framing: str
    provider: str
    frames: int
    terminal: tuple[str, str | None, str | None] | None  # native_type, stop_reason, status
    text_len: int
    text_sha: str
    tools: list[tuple[str | None, str | None, str]]
    reasoning_len: int
    errors: list[str | None]
    usage: bool


CASES = [
    Case("anthropic/code-execution-emoji.sse", "sse", "anthropic-messages", 35, ("message_stop", "end_turn", None), 501, "daa935c0ed5d88c96e1c909795eb84f6b5e817dd5e758638349bb6a7732567b2", [("srvtoolu_01MwXaweAHve88x6s3Fc8x6Q", "bash_code_execution", '{"command": "echo \\"65465-6544 * 65464-6+1.02255\\" | bc -l"}')], 46, [], True),
    Case("anthropic/redacted-thinking.sse", "sse", "anthropic-messages", 27, ("message_stop", "end_turn", None), 359, "33e0d169251b911c3efe246fc3ae7eefee5090f9a6017f540195e89ab94da4a1", [], 0, [], True),
    Case("anthropic/stop-sequence.sse", "sse", "anthropic-messages", 10, ("message_stop", "stop_sequence", None), 102, "7f25fb5d48dfdb22399664adbc0aea053ece4eb048558705e64693a5362ba2b0", [], 0, [], True),
    Case("anthropic/text-basic.sse", "sse", "anthropic-messages", 7, ("message_stop", "end_turn", None), 5, "185f8db32271fe25f561a6fc938b2e264306ec304eda518007d1764826381969", [], 0, [], True),
    Case("anthropic/thinking-signature.sse", "sse", "anthropic-messages", 118, ("message_stop", "end_turn", None), 1021, "1b0c432c3a48cc2829d6ff2b6e2c0f62881416d4583337d6f8a8a9a48ad73dfc", [], 202, [], True),
    Case("anthropic/thinking-then-tool-use.sse", "sse", "anthropic-messages", 13, ("message_stop", "tool_use", None), 0, EMPTY_SHA, [("toolu_01825dXWLSoJwCst1qTsiWdb", "fixed_version", "{}")], 180, [], True),
    Case("anthropic/web-search-citations.sse", "sse", "anthropic-messages", 120, ("message_stop", "end_turn", None), 650, "8276daa53931f800c12bfbcf468939eafe2c07c487758624f9690edaab5ec387", [("srvtoolu_01SPfvT38PDPAFnkcrMNGUrM", "web_search", '{"query": "San Francisco weather today"}')], 0, [], True),
    Case("bedrock/claude-3-7-redacted-thinking.bin", "aws-eventstream", "bedrock-converse-stream", 18, ("messageStop", "end_turn", None), 359, "38f03db0adb8950c1fa1db583103000dee469ed3a8cd87cbacb44d10b26b95b7", [], 0, [], True),
    Case("bedrock/claude-citations.bin", "aws-eventstream", "bedrock-converse-stream", 18, ("messageStop", "end_turn", None), 149, "77a150f1382d46e806d96ec2b38a2cb5b4835b319ea30fcdbed5b5743a96894a", [], 0, [], True),
    Case("bedrock/claude-sonnet-4-thinking.bin", "aws-eventstream", "bedrock-converse-stream", 25, ("messageStop", "end_turn", None), 55, "cf0df41603b717b1c9f4dd685256e8a57da5c29b9e28a66fa6900ebfdf64b36f", [], 193, [], True),
    Case("bedrock/claude-tool-use.bin", "aws-eventstream", "bedrock-converse-stream", 11, ("messageStop", "tool_use", None), 0, EMPTY_SHA, [("tooluse_q8A6U9X7S4apz8TPXNx4Kq", "get_weather", '{"location": "San Francisco, CA"}')], 0, [], True),
    Case("bedrock/gpt-oss-empty-text-delta.bin", "aws-eventstream", "bedrock-converse-stream", 10, ("messageStop", "end_turn", None), 32, "fda564ba3f7a0f028106d468420f674898ed99ac5bf2765ac9586206e39d73c5", [], 119, [], True),
    Case("bedrock/nova-micro-text.bin", "aws-eventstream", "bedrock-converse-stream", 33, ("messageStop", "end_turn", None), 375, "eab28e465c59ab1001d01b518a1fa908a73640f51c1fecb0565c24585c997ad7", [], 0, [], True),
    Case("gemini/jsonarray-function-call-finish-message.json", "json-array", "gemini", 2, ("finishReason", "STOP", None), 0, EMPTY_SHA, [(None, "pelican_name_generator", "{}")], 236, [], True),
    Case("gemini/jsonarray-function-call-thought-signature.json", "json-array", "gemini", 2, ("finishReason", "STOP", None), 0, EMPTY_SHA, [(None, "multiply", '{"y": 3, "x": 5}')], 0, [], True),
    Case("gemini/jsonarray-thinking-text.json", "json-array", "gemini", 3, ("finishReason", "STOP", None), 5, "f1a13c3ad5f117befdb68e917c2e09b7e9286dce00a62e33e3d97ac0e1ddc22d", [], 275, [], True),
    Case("gemini/sse-function-call-thought-signature.sse", "sse", "gemini", 2, ("finishReason", "STOP", None), 0, EMPTY_SHA, [(None, "get_country", "{}")], 0, [], True),
    Case("gemini/sse-text.sse", "sse", "gemini", 3, ("finishReason", "STOP", None), 32, "c9ba5557ea09feef90011604657255a11621c036b482e8c85fe966f2cf20d0b7", [], 0, [], True),
    Case("gemini/sse-thinking.sse", "sse", "gemini", 23, ("finishReason", "STOP", None), 1938, "8c4308d5109d741f711e414af671ed9e2f61492c45fb0d3e99e5c81007336546", [], 1575, [], True),
    Case("ollama/generate-granite-text.ndjson", "ndjson", "ollama", 64, ("generate", "stop", None), 239, "0cbaceef19d6ce1f43b2e177a16483566ffe762439b1c20179721c5fe8f9d870", [], 0, [], True),
    Case("ollama/generate-qwen3-think-tags.ndjson", "ndjson", "ollama", 186, ("generate", "stop", None), 906, "d72078a04fdf824db1328f7b975989b5465d058da7cc977b4f75881b203faaae", [], 0, [], True),
    Case("openai-chat/deepseek-reasoning-content.sse", "sse", "openai-chat", 212, ("chat.completion.chunk", "stop", None), 40, "cf0e60278f7fbdc36fdaf5630f08ec831d6d051d936563171e86258ad95ae574", [], 882, [], True),
    Case("openai-chat/groq-error-event-after-200.sse", "sse", "openai-chat", 95, None, 0, EMPTY_SHA, [], 412, ["tool_use_failed"], False),
    Case("openai-chat/openrouter-error-chunk-finish-length.sse", "sse", "openai-chat", 5, ("chat.completion.chunk", "length", None), 0, EMPTY_SHA, [], 42, ["400"], True),
    Case("openai-chat/text-usage-moderation-gpt-5.sse", "sse", "openai-chat", 7, ("chat.completion.chunk", "stop", None), 6, "bdff8c417ab50e95e95cce16035a3799c7e00104de4a7b3453f06728c620faf7", [], 0, [], True),
    Case("openai-chat/tool-call-include-usage-gpt-4o-mini.sse", "sse", "openai-chat", 9, ("chat.completion.chunk", "tool_calls", None), 0, EMPTY_SHA, [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", '{"country":"UK"}')], 0, [], True),
    Case("openai-responses/background-queued.sse", "sse", "openai-responses", 17, ("response.completed", None, "completed"), 15, "088c1ac1aec9ec1a8d975f916676e06ba44b4a5144d78231fc87298d6ef78d18", [], 0, [], True),
    Case("openai-responses/error-insufficient-quota.chunks.txt", "chunks", "openai-responses", 4, ("response.failed", None, "failed"), 0, EMPTY_SHA, [], 0, ["insufficient_quota"], False),
    Case("openai-responses/function-call-gpt-4o.sse", "sse", "openai-responses", 11, ("response.completed", None, "completed"), 0, EMPTY_SHA, [("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", '{"country":"France"}')], 0, [], True),
    Case("openai-responses/openrouter-data-only-with-done.sse", "sse", "openai-responses", 41, ("response.completed", None, "completed"), 1, "4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a", [], 85, [], True),
    Case("openai-responses/reasoning-summary-o3-mini.sse", "sse", "openai-responses", 676, ("response.completed", None, "completed"), 1251, "4242cea70d53d7d1eb50d239ff4eaa73c101b72b1198b763679653eaec7fd88b", [], 2022, [], True),
    Case("openai-responses/text-gpt-4o.sse", "sse", "openai-responses", 15, ("response.completed", None, "completed"), 31, "a1b7eb2ee7a6aded8dda4e6cf30826f5afffb28a5597ee9389e91eb326d4e319", [], 0, [], True),
    Case("openai-responses/text-then-function-call-gpt-5.5.sse", "sse", "openai-responses", 33, ("response.completed", None, "completed"), 52, "88a2626cee5b367940b269d79430acceea7640f1583eb78568a2c1a04e8850fc", [("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", '{"country":"PotatoLand"}')], 0, [], True),
    Case("xai/chat-reasoning-text.chunks.txt", "chunks", "xai", 344, ("chat.completion.chunk", "stop", None), 4, "dca61d32363b091bf130e0b539eaa6557a3a035be17a1be1e3dc2c183eafcd2f", [], 1455, [], True),
    Case("xai/chat-reasoning-tool-call.chunks.txt", "chunks", "xai", 230, ("chat.completion.chunk", "tool_calls", None), 0, EMPTY_SHA, [("call_79382389", "weather", '{"location":"San Francisco"}')], 1069, [], True),
]


def _read(path: str, **kwargs: object):
    return read_capture((REAL / path).read_bytes(), filename=path, **kwargs)


def test_every_real_capture_has_a_case() -> None:
    on_disk = sorted(str(p.relative_to(REAL)) for p in REAL.glob("*/*")
                     if p.parent.name != "aws-eventstream-vectors")
    assert on_disk == sorted(case.path for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.path for c in CASES])
def test_real_capture(case: Case) -> None:
    reading = _read(case.path)
    summary = summarize(reading.observations)
    assert (reading.framing, reading.provider, len(reading.frames)) == (
        case.framing, case.provider, case.frames)
    assert reading.truncation is None
    assert reading.terminal_seen is (case.terminal is not None)
    terminal = summary.terminal
    got_terminal = None if terminal is None else (terminal.native_type, terminal.stop_reason,
                                                  terminal.status)
    assert got_terminal == case.terminal
    assert (len(summary.text), hashlib.sha256(summary.text.encode()).hexdigest()) == (
        case.text_len, case.text_sha)
    assert [(c.tool_call_id, c.name, c.arguments) for c in summary.tool_calls] == case.tools
    assert len(summary.reasoning) == case.reasoning_len
    assert [e.error_code for e in summary.errors] == case.errors
    assert bool(summary.usage) is case.usage
    assert summary.unknown == 0, "real captures contain no unrecognised shapes"
    # frames point back at their bytes, in order, without overlap
    ends = [f.offset + f.length for f in reading.frames]
    assert all(a <= f.offset for a, f in zip(ends, reading.frames[1:]))


# -- details worth pinning beyond the table ---------------------------------------------

def test_anthropic_stop_sequence_value_is_in_the_native_message_delta() -> None:
    reading = _read("anthropic/stop-sequence.sse")
    deltas = [f.native for f in reading.frames if f.event_name == "message_delta"]
    assert deltas[-1]["delta"]["stop_sequence"] == "```"
    assert reading.frames[-1].observations == (O("terminal", "message_stop", stop_reason="stop_sequence"),)


def test_anthropic_text_basic_exact_observations() -> None:
    reading = _read("anthropic/text-basic.sse")
    obs = [o.kind for f in reading.frames for o in f.observations]
    assert obs == ["message_start", "usage", "block_start", "keepalive", "text_delta", "block_stop",
                   "usage", "terminal"]
    assert summarize(reading.observations).text == "Hello"
    assert [f.event_name for f in reading.frames] == [
        "message_start", "content_block_start", "ping", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop"]


def test_anthropic_signatures_and_redacted_thinking_are_kept() -> None:
    reading = _read("anthropic/thinking-signature.sse")
    assert len(summarize(reading.observations).signatures) == 1
    redacted = _read("anthropic/redacted-thinking.sse")
    starts = [o.block_type for o in redacted.observations if o.kind == "block_start"]
    assert starts == ["redacted_reasoning", "redacted_reasoning", "text"]
    assert sum(o.kind == "keepalive" for o in redacted.observations) == 3


def test_anthropic_server_tool_blocks_are_marked() -> None:
    reading = _read("anthropic/web-search-citations.sse")
    done = [o for o in reading.observations if o.kind == "tool_call_done"]
    assert [o.block_type for o in done] == ["server_tool_use"]
    assert any(o.kind == "block_start" and o.block_type == "web_search_tool_result"
               for o in reading.observations)


def test_bedrock_padding_kept_in_native_and_reasoning_signature_kept() -> None:
    reading = _read("bedrock/claude-sonnet-4-thinking.bin")
    assert all("p" in next(iter(f.native.values())) for f in reading.frames)
    sigs = [o for o in reading.observations if o.signature]
    assert len(sigs) == 1 and sigs[0].kind == "raw" and sigs[0].block == 0
    usage = [o.usage for o in reading.observations if o.kind == "usage"]
    assert usage == [{"inputTokens": 36, "outputTokens": 73, "totalTokens": 109}]


def test_bedrock_citations_are_raw() -> None:
    reading = _read("bedrock/claude-citations.bin")
    assert sum(o.kind == "raw" for o in reading.observations) == 2


def test_gemini_empty_text_signature_part_is_kept_as_raw() -> None:
    reading = _read("gemini/sse-function-call-thought-signature.sse")
    last = reading.frames[-1].observations
    assert last[0].kind == "raw" and last[0].signature is None  # empty text, no signature here
    first = reading.frames[0].observations
    assert first[0].kind == "tool_call_start" and first[0].signature is not None
    # Gemini 3 style: the final chunk's empty text part carries the signature → raw, kept
    array = _read("gemini/jsonarray-thinking-text.json")
    assert [(o.kind, o.text) for o in array.observations if o.signature] == [("raw", None)]
    # 2.5-pro style: the signature rides on a non-empty text part → kept on its text_delta
    thinking = _read("gemini/sse-thinking.sse")
    assert [o.kind for o in thinking.observations if o.signature] == ["text_delta"]


def test_gemini_finish_message_is_carried() -> None:
    reading = _read("gemini/jsonarray-function-call-finish-message.json")
    terminal = summarize(reading.observations).terminal
    assert terminal is not None and terminal.message == "Model generated function call(s)."


def test_openai_responses_final_text_agrees_and_is_not_appended() -> None:
    for path in ("openai-responses/text-gpt-4o.sse", "openai-responses/reasoning-summary-o3-mini.sse",
                 "openai-responses/text-then-function-call-gpt-5.5.sse"):
        summary = summarize(_read(path).observations)
        assert len(summary.final_texts) == 2  # output_text.done + response.completed output
        for block, text in summary.final_texts:
            assert summary.text_by_block[block] == text


def test_openai_responses_sequence_numbers_and_done_sentinel() -> None:
    reading = _read("openai-responses/openrouter-data-only-with-done.sse")
    assert reading.frames[-1].native == "[DONE]"
    assert reading.frames[-1].observations == (O("keepalive", "[DONE]"),)
    assert all(f.event_name is None for f in reading.frames)  # data-only SSE
    seqs = [o.sequence for f in reading.frames[:-1] for o in f.observations[:1]]
    assert seqs == list(range(len(seqs)))
    # the 2025-03 gpt-4o capture has no sequence numbers at all
    assert all(o.sequence is None for o in _read("openai-responses/text-gpt-4o.sse").observations)


def test_openai_error_then_failed() -> None:
    reading = _read("openai-responses/error-insufficient-quota.chunks.txt")
    kinds = [[o.kind for o in f.observations] for f in reading.frames]
    assert kinds == [["message_start"], ["keepalive"], ["error"], ["terminal"]]
    terminal = reading.frames[-1].observations[-1]
    assert (terminal.status, terminal.error_code, terminal.sequence) == ("failed", "insufficient_quota", 3)


def test_chat_dialects() -> None:
    groq = _read("openai-chat/groq-error-event-after-200.sse")
    assert groq.frames[-1].event_name == "error"
    assert groq.frames[-1].native != "[DONE]" and not groq.terminal_seen
    router = _read("openai-chat/openrouter-error-chunk-finish-length.sse")
    assert [o.kind for o in router.frames[-2].observations] == ["error", "usage"]
    assert router.frames[-1].observations == (O("keepalive", "[DONE]"),)
    assert sum(o.kind == "message_start" for o in router.observations) == 1
    deepseek = _read("openai-chat/deepseek-reasoning-content.sse")
    assert [o.kind for o in deepseek.frames[-2].observations] == ["usage", "terminal"]
    gpt5 = _read("openai-chat/text-usage-moderation-gpt-5.sse")
    assert [[o.kind for o in f.observations] for f in gpt5.frames[-3:]] == [
        ["usage"], ["raw"], ["keepalive"]]


def test_xai_usage_chunk_counts_reasoning() -> None:
    reading = _read("xai/chat-reasoning-text.chunks.txt")
    usage = summarize(reading.observations).usage[-1]
    assert usage["total_tokens"] == 354 and usage["completion_tokens_details"]["reasoning_tokens"] == 340


def test_ollama_done_line_usage_is_exactly_the_native_counters() -> None:
    reading = _read("ollama/generate-granite-text.ndjson")
    usage = summarize(reading.observations).usage
    assert len(usage) == 1 and set(usage[0]) <= {"total_duration", "load_duration",
                                                 "prompt_eval_count", "prompt_eval_duration",
                                                 "eval_count", "eval_duration"}
    assert usage[0]["eval_count"] == reading.frames[-1].native["eval_count"]
    qwen = summarize(_read("ollama/generate-qwen3-think-tags.ndjson").observations)
    assert qwen.text.startswith("<think>") and qwen.reasoning == ""


# -- chunking must not matter ------------------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES),
       chunk=st.integers(min_value=1, max_value=97))
def test_random_chunk_sizes_give_identical_readings(case: Case, chunk: int) -> None:
    assert _read(case.path, chunk_size=chunk) == _read(case.path)


@pytest.mark.parametrize("chunk", [1, 3, 7])
def test_emoji_capture_split_mid_utf8(chunk: int) -> None:
    path = "anthropic/code-execution-emoji.sse"
    assert "\u2705" in summarize(_read(path).observations).text
    assert _read(path, chunk_size=chunk) == _read(path)
