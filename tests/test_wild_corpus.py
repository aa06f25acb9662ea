"""Every body of the wild corpus (fixtures/wild/, 1,014 bodies other projects recorded) read by
tracestore and by the official SDK decoders (tests/wild_oracle.py): the same frames, the same
native payloads, the same answer text; whole-body for all, 1-byte chunks for a sample.

A body tracestore does not read is refused with a typed error (never a crash); the SDK
readings it is compared with are computed once per module (the budget is ~30 s on CI).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import wild_oracle
from tracestore.errors import TracestoreError
from tracestore.providers.capture import CaptureReading, read_capture

WILD = Path(__file__).resolve().parent.parent / "fixtures" / "wild"
INDEX = [json.loads(line) for line in (WILD / "index.jsonl").read_text("utf-8").splitlines()]

#: Bodies whose answer text differs from the SDK's, each with why (and each is never
#: released: see test_a_text_difference_is_never_released).
TEXT_DIFFERENCES = {
    # vercel fixtures concatenate the responses of a multi-step run: the SDK's snapshot is
    # the first message; tracestore reads on and the grammar holds the second message.
    "vercel-chunks/anthropic/vercel__duplicate-message-start.chunks.txt":
        "a second message_start inside one stream",
    "vercel-chunks/azure/vercel__azure-reasoning-encrypted-content.1.chunks.txt":
        "a second response.created after response.completed",
    "vercel-chunks/openai/vercel__openai-reasoning-encrypted-content.1.chunks.txt":
        "a second response.created after response.completed",
    "vercel-chunks/openai/vercel__openai-shell-tool.1.chunks.txt":
        "a second response.created after response.completed",
}

#: The label each body may get, from its recording's own URL (index.jsonl ``api``) and, for
#: vercel chunk fixtures, its provider folder: a stream no normalizer here reads is refused
#: (``None``), never given another API's label (issue 19: legacy completions, Bedrock
#: InvokeModel/InvokeAgent and Cohere v1 once were).
LABELS_BY_API = {
    "chat": {"openai-chat", "xai"}, "messages": {"anthropic-messages"},
    "responses": {"openai-responses"}, "converse-stream": {"bedrock-converse-stream"},
    "sse": {"gemini"}, "json-array": {"gemini", "openai-chat"}, "/api/chat": {"ollama"},
    "completions": {None}, "invoke-with-response-stream": {None}, "chat-native": {None},
}
LABELS_BY_ERROR_VENDOR = {
    "openai": {"openai-chat", "openai-responses"}, "anthropic": {"anthropic-messages"},
    "gemini": {"gemini"},
}
LABELS_BY_CHUNK_VENDOR = {
    "anthropic": {"anthropic-messages"}, "amazon-bedrock": {"bedrock-converse-stream"},
    "google": {"gemini"}, "cohere": {"cohere-v2"}, "xai": {"xai"},
    "azure": {"openai-chat", "openai-responses"}, "openai": {"openai-chat", "openai-responses", None},
    "open-responses": {"openai-responses"},
}


@dataclass(frozen=True)
class Pair:
    name: str
    oracle: wild_oracle.OracleReading | None
    oracle_error: str | None
    reading: CaptureReading | None
    refusal: str | None         # tracestore's typed error code


def _tracestore_text(reading: CaptureReading) -> tuple[str, str]:
    """(answer text, refusal text) up to the first native terminal, in block order."""
    text: dict[Any, str] = {}
    refusal = ""
    for frame in reading.frames:
        for obs in frame.observations:
            if obs.kind == "text_delta" and obs.text:
                if obs.block_type == "refusal":
                    refusal += obs.text
                else:
                    text[obs.block] = text.get(obs.block, "") + obs.text
        if any(obs.kind == "terminal" for obs in frame.observations):
            break
    return "".join(text.values()), refusal


def _pair(name: str, chunk: int | None = None) -> Pair:
    data = (WILD / name).read_bytes()
    try:
        oracle, oracle_error = wild_oracle.read(data, name, chunk=chunk), None
    except ValueError as exc:  # json.JSONDecodeError and the SDKs' parse errors
        oracle, oracle_error = None, type(exc).__name__
    try:
        return Pair(name, oracle, oracle_error, read_capture(data, filename=name,
                                                            chunk_size=chunk), None)
    except TracestoreError as exc:
        return Pair(name, oracle, oracle_error, None, exc.code)


@pytest.fixture(scope="module")
def pairs() -> list[Pair]:
    return [_pair(entry["file"]) for entry in INDEX]


def test_the_corpus_is_complete_with_its_provenance() -> None:
    assert len(INDEX) == 1014 and (WILD / "PROVENANCE.md").is_file()
    for entry in INDEX:
        data = (WILD / entry["file"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"])


def _mismatches(pair: Pair) -> str | None:
    if pair.reading is None:
        return None  # refused with a typed error: checked separately
    if pair.oracle is None:
        return f"tracestore read what the SDK decoder rejects ({pair.oracle_error})"
    natives = [frame.native for frame in pair.reading.frames]
    if len(natives) != len(pair.oracle.natives):
        return f"{len(natives)} frames, the SDK decoded {len(pair.oracle.natives)}"
    if natives != pair.oracle.natives:
        at = next(i for i, (a, b) in enumerate(zip(natives, pair.oracle.natives)) if a != b)
        return f"native payload #{at} differs"
    return None


def test_frames_and_native_payloads_equal_the_sdks(pairs: list[Pair]) -> None:
    bad = {p.name: why for p in pairs if (why := _mismatches(p)) is not None}
    assert bad == {}


def test_a_body_tracestore_refuses_is_a_typed_error_not_a_crash(pairs: list[Pair]) -> None:
    refused = {p.name: p.refusal for p in pairs if p.reading is None}
    # every refusal is one of the input codes (the fixture itself would have crashed on any
    # other exception); the SDK could not read a body tracestore refuses as bad JSON either
    assert set(refused.values()) <= {"unknown_provider", "invalid_json"}
    json_refused = {n for n, c in refused.items() if c == "invalid_json"}
    sdk_read = {n for n in json_refused if pairs_by_name(pairs)[n].oracle is not None}
    # A pretty-printed JSON error body is valid JSON: read as an error body, never refused
    # as "not strict JSON" (issue 19).
    assert sdk_read == set()


def pairs_by_name(pairs: list[Pair]) -> dict[str, Pair]:
    return {p.name: p for p in pairs}


def test_answer_text_equals_the_sdks(pairs: list[Pair]) -> None:
    differs = {}
    compared = 0
    for p in pairs:
        if p.reading is None or p.oracle is None or p.oracle.text is None:
            continue
        compared += 1
        got = _tracestore_text(p.reading)
        if got != (p.oracle.text, p.oracle.refusal):
            differs[p.name] = (got[0][:40], p.oracle.text[:40])
    assert set(differs) == set(TEXT_DIFFERENCES), differs
    assert compared == 972  # the 5 legacy completions bodies are refused, not compared


def test_every_label_is_the_bodys_own_api_or_a_refusal(pairs: list[Pair]) -> None:
    wrong = {}
    for entry, p in zip(INDEX, pairs):
        label = p.reading.provider if p.reading is not None else None
        if entry["file"].startswith("http-error/"):  # a whole-body error: its vendor's family
            allowed = LABELS_BY_ERROR_VENDOR[entry["vendor"]]
        elif entry["api"] == "chunks":
            allowed = LABELS_BY_CHUNK_VENDOR.get(entry["vendor"], {"openai-chat"})
        else:
            allowed = LABELS_BY_API.get(entry["api"], {"openai-chat", "openai-responses",
                                                       "anthropic-messages", "gemini"})
        if label is not None and label not in allowed:  # a refusal is never a wrong label
            wrong[entry["file"]] = (label, sorted(map(str, allowed)))
    assert wrong == {}


def test_an_unsupported_stream_is_refused_by_name() -> None:
    cases = {"openai-other/ddt__openai_completions_post_1dd33b11.sse": "openai-completions",
             "bedrock-invoke/ddt__meta_invoke_stream.bin": "bedrock-invoke",
             "bedrock-other/ddt__agent_invoke.bin": "bedrock-invoke",
             "cohere/llmcoh__prompt.ndjson": "cohere-v1"}
    for name, kind in cases.items():
        with pytest.raises(TracestoreError) as refused:
            read_capture((WILD / name).read_bytes(), filename=name)
        assert (refused.value.code, refused.value.context.get("recognized")) == (
            "unknown_provider", kind), name


#: Every 25th body under 40 kB (and no more than 40 of them): 1-byte chunks through both.
SAMPLE = [e["file"] for e in INDEX if e["size"] < 40_000][::25][:40]


@pytest.mark.parametrize("name", SAMPLE)
def test_one_byte_chunks_read_what_the_whole_body_reads(name: str, pairs: list[Pair]) -> None:
    whole = pairs_by_name(pairs)[name]
    split = _pair(name, chunk=1)
    assert (split.refusal, split.oracle_error) == (whole.refusal, whole.oracle_error)
    if whole.reading is not None:
        assert split.reading is not None
        assert [f.native for f in split.reading.frames] == [f.native for f in whole.reading.frames]
        assert split.reading.observations == whole.reading.observations
    if whole.oracle is not None:
        assert split.oracle == whole.oracle
