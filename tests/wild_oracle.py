"""What the official SDKs read from a wild body: frames, native payloads and answer text.

The frame decoders are the SDKs' own: openai's and anthropic's ``SSEDecoder`` (the one
their ``Stream`` reads), google-genai's ``HttpResponse.segments`` (the line reader its
streaming ``generate_content`` uses), botocore's ``EventStreamBuffer`` and httpx-sse's
``SSEDecoder`` for the other SSE dialects.  Line framings (NDJSON, vercel ``.chunks.txt``)
and JSON arrays have no SDK decoder: ``json`` reads them.  The answer text is the SDKs'
own accumulation where one exists (openai ``ChatCompletionStreamState`` and
``ResponseStreamState``, anthropic ``accumulate_event``, google-genai
``GenerateContentResponse.text``); Bedrock's is the ``contentBlockDelta.delta.text``
fragments botocore decoded, Ollama's its ``message.content`` / ``response`` fields.

The dialect (which accumulation applies) is read from the body's own first payloads by the
naive rules below, written for this test and independent of tracestore's detection.
"""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

DONE = "[DONE]"


@dataclass(frozen=True)
class OracleReading:
    framing: str
    natives: list[Any]          # per frame, "[DONE]" for the sentinel
    dialect: str | None         # which SDK accumulation read the text (None: no SDK reads it)
    text: str | None
    refusal: str = ""           # chat message.refusal / Responses refusal deltas


def _pieces(data: bytes, chunk: int | None) -> Iterator[bytes]:
    if chunk is None:
        yield data
        return
    for i in range(0, len(data), chunk):
        yield data[i:i + chunk]


# -- frames ------------------------------------------------------------------------------

def _sse_openai(data: bytes, chunk: int | None) -> list[str]:
    from openai._streaming import SSEDecoder
    return [e.data for e in SSEDecoder().iter_bytes(_pieces(data, chunk)) if e.data]


def _sse_anthropic(data: bytes, chunk: int | None) -> list[str]:
    from anthropic._streaming import SSEDecoder
    return [e.data for e in SSEDecoder().iter_bytes(_pieces(data, chunk)) if e.data]


def _sse_genai(data: bytes, chunk: int | None) -> list[Any]:
    import httpx2
    from google.genai._api_client import HttpResponse
    response = httpx2.Response(200, content=_pieces(data, chunk))
    return list(HttpResponse({}, response).segments())


def _sse_httpx(data: bytes, chunk: int | None) -> list[str]:
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder
    lines, decoder, out = SSELineDecoder(), SSEDecoder(), []
    for piece in _pieces(data, chunk):
        for line in lines.decode(piece.decode("utf-8")):
            event = decoder.decode(line)
            if event is not None and event.data:
                out.append(event.data)
    for line in lines.flush():
        event = decoder.decode(line)
        if event is not None and event.data:
            out.append(event.data)
    event = decoder.decode("")
    if event is not None and event.data:
        out.append(event.data)
    return out


def _eventstream(data: bytes, chunk: int | None) -> list[Any]:
    from botocore.eventstream import EventStreamBuffer
    buffer, out = EventStreamBuffer(), []
    for piece in _pieces(data, chunk):
        buffer.add_data(piece)
        for message in buffer:
            headers = message.headers
            name = headers.get(":event-type") or headers.get(":exception-type")
            payload = json.loads(message.payload) if message.payload else {}
            out.append((name, headers.get(":message-type"), payload))
    return out


def _parse(text: str) -> Any:
    return DONE if text.strip() == DONE else json.loads(text)


# -- dialects ----------------------------------------------------------------------------

ANTHROPIC_EVENTS = {"message_start", "content_block_start", "content_block_delta",
                    "content_block_stop", "message_delta", "message_stop", "ping"}


def dialect_of(natives: list[Any]) -> str | None:
    for n in natives:
        if not isinstance(n, dict):
            continue
        t = n.get("type")
        if isinstance(t, str) and t.startswith("response."):
            return "responses"
        if t in ANTHROPIC_EVENTS:
            return "anthropic"
        if "candidates" in n or "usageMetadata" in n:
            return "gemini"
        choices = n.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            if "text" in choices[0] and "delta" not in choices[0]:
                return "completions"
            return "chat"
        if "done" in n and ("message" in n or "response" in n):
            return "ollama"
        if len(n) == 1 and next(iter(n)) in CONVERSE:
            return "bedrock"
    return None


def _chat_text(natives: list[Any]) -> tuple[str | None, str]:
    from openai.lib.streaming.chat._completions import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk
    from openai._models import construct_type_unchecked
    chunks = []
    for n in natives:
        if n == DONE:
            break  # openai.Stream stops at the sentinel
        if not isinstance(n, dict) or n.get("error") is not None:
            break  # the SDK raises APIError on an error chunk
        if isinstance(n.get("choices"), list):
            chunks.append(construct_type_unchecked(type_=ChatCompletionChunk, value=copy.deepcopy(n)))
    state = ChatCompletionStreamState()
    try:
        for chunk in chunks:
            state.handle_chunk(chunk)
        choices = sorted(state.current_completion_snapshot.choices, key=lambda c: c.index)
        return ("".join(c.message.content or "" for c in choices),
                "".join(c.message.refusal or "" for c in choices))
    except AssertionError:  # no chunk with choices at all
        return "", ""
    except (RuntimeError, TypeError, AttributeError):
        # The accumulator refuses a dialect's extra list fields (Mistral tool calls without
        # ``index``, OpenRouter annotations): read the typed chunks' deltas instead.
        text: dict[int, str] = {}
        refusal: dict[int, str] = {}
        for chunk in chunks:
            for c in chunk.choices or []:
                if c.delta is not None and not isinstance(c.delta.content, (str, type(None))):
                    return None, ""  # Mistral's list-of-parts content: no SDK here reads it
                if c.delta is not None:
                    text[c.index] = text.get(c.index, "") + (c.delta.content or "")
                    refusal[c.index] = refusal.get(c.index, "") + (c.delta.refusal or "")
        return "".join(text[i] for i in sorted(text)), "".join(refusal[i] for i in sorted(refusal))


def _completions_text(natives: list[Any]) -> str:
    from openai.types import Completion
    from openai._models import construct_type_unchecked
    parts: dict[int, str] = {}
    for n in natives:
        if n == DONE:
            break
        completion = construct_type_unchecked(type_=Completion, value=n)
        for choice in completion.choices or []:
            parts[choice.index] = parts.get(choice.index, "") + (choice.text or "")
    return "".join(parts[i] for i in sorted(parts)), ""


def _responses_text(natives: list[Any]) -> str:
    from openai.types.responses import ResponseStreamEvent
    from openai._models import construct_type_unchecked
    text, refusal = [], []
    for n in natives:
        if n == DONE or not isinstance(n, dict):
            continue
        event = construct_type_unchecked(type_=ResponseStreamEvent, value=copy.deepcopy(n))
        if event.type == "response.output_text.delta":
            text.append(event.delta or "")
        elif event.type == "response.refusal.delta":
            refusal.append(event.delta or "")
    return "".join(text), "".join(refusal)


def _anthropic_text(natives: list[Any]) -> str:
    from anthropic.lib.streaming._messages import accumulate_event
    snapshot, bufs = None, {}
    for n in natives:
        if not isinstance(n, dict) or n.get("type") not in ANTHROPIC_EVENTS or n["type"] == "ping":
            continue
        if n["type"] == "message_start" and snapshot is not None:
            break  # one Message per stream: the SDK's snapshot is the first message
        snapshot = accumulate_event(event=copy.deepcopy(n), current_snapshot=snapshot,
                                    json_bufs=bufs)
    if snapshot is None:
        return "", ""
    return "".join(b.text for b in snapshot.content if b.type == "text"), ""


def _gemini_text(natives: list[Any]) -> str:
    from google.genai import types
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in natives:
            if isinstance(n, dict) and ("candidates" in n or "usageMetadata" in n):
                response = types.GenerateContentResponse._from_response(
                    response=copy.deepcopy(n), kwargs={})
                out.append(response.text or "")
    return "".join(out), ""


def _ollama_text(natives: list[Any]) -> str:
    out = []
    for n in natives:
        if isinstance(n, dict):
            message = n.get("message")
            out.append(message.get("content") or "" if isinstance(message, dict) else n.get("response") or "")
    return "".join(out), ""


def _bedrock_text(frames: list[Any]) -> str:
    out = []
    for name, _kind, payload in frames:
        if name == "contentBlockDelta":
            out.append(((payload.get("delta") or {}).get("text")) or "")
    return "".join(out)


def _bedrock_json_text(natives: list[Any]) -> tuple[str, str]:
    frames = [(next(iter(n)), "event", next(iter(n.values()))) for n in natives
              if isinstance(n, dict) and len(n) == 1]
    return _bedrock_text(frames), ""


TEXT = {"chat": _chat_text, "completions": _completions_text, "responses": _responses_text,
        "anthropic": _anthropic_text, "gemini": _gemini_text, "ollama": _ollama_text,
        "bedrock": _bedrock_json_text}


def sse_sdk(name: str) -> str:
    """Which SDK's SSE decoder reads a body: the one its client would use."""
    top = name.split("/")[0]
    if top == "anthropic" or "anthropic" in name.split("/")[-1]:
        return "anthropic"
    if top == "gemini" or "models/gemini" in name or "google" in name.split("/")[-1]:
        return "genai"
    if top in ("openai-chat", "openai-responses", "openai-other", "azure-openai",
               "gemini-openai-compat"):
        return "openai"
    return "httpx-sse"


def read(data: bytes, name: str, *, chunk: int | None = None) -> OracleReading:
    """The SDKs' reading of one body (its path picks which SDK's SSE decoder)."""
    if name.endswith(".chunks.txt") or name.endswith(".ndjson"):
        lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
        natives = [_parse(line) for line in lines]
        framing = "chunks" if name.endswith(".chunks.txt") else "ndjson"
    elif name.endswith(".bin"):
        frames = _eventstream(data, chunk)
        converse = all(kind == "event" and name_ in CONVERSE for name_, kind, _ in frames)
        natives = [{name_: payload} for name_, _kind, payload in frames]
        return OracleReading("aws-eventstream", natives, "bedrock" if converse else None,
                             _bedrock_text(frames) if converse else None)
    elif name.endswith(".json"):
        value = json.loads(data)
        framing = "json-array" if isinstance(value, list) else "json"
        natives = value if isinstance(value, list) else [value]
    else:
        framing = "sse"
        sdk = sse_sdk(name)
        if sdk == "anthropic":
            natives = [_parse(d) for d in _sse_anthropic(data, chunk)]
        elif sdk == "genai":
            natives = _sse_genai(data, chunk)
        elif sdk == "openai":
            natives = [_parse(d) for d in _sse_openai(data, chunk)]
        else:
            natives = [_parse(d) for d in _sse_httpx(data, chunk)]
    dialect = dialect_of(natives)
    if dialect not in TEXT:
        return OracleReading(framing, natives, None, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic's serializer notes on foreign dialects
        text, refusal = TEXT[dialect](natives)
    return OracleReading(framing, natives, dialect if text is not None else None, text, refusal)


CONVERSE = {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
            "messageStop", "metadata"}
