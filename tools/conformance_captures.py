"""Write fixtures/conformance/captures/: seed 003's decoded events as the Chat Completions
SSE bodies an OpenAI-compatible provider would have sent for them.

Each capture carries the seed's two deltas ("The public desk opens Wednesday from 09:00 to
17:00 UTC. ", "It is closed Thursday.") and the seed case's ending, in Chat Completions'
own words: ``finish_reason`` for a native ending, an ``{"error": …}`` chunk for a native
failure or exception (as OpenAI and OpenRouter send one after HTTP 200), no terminal for
a drop.  Run from the repository root: ``python tools/conformance_captures.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "conformance" / "captures"
FIRST = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "
SECOND = "It is closed Thursday."
ID, CREATED, MODEL = "chatcmpl-seed003", 1760000000, "gpt-4o-mini-2024-07-18"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None,
          usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": ID, "object": "chat.completion.chunk", "created": CREATED,
                            "model": MODEL, "choices": []}
    if delta is not None or finish is not None:
        body["choices"] = [{"index": 0, "delta": delta or {}, "logprobs": None,
                            "finish_reason": finish}]
    if usage is not None:
        body["usage"] = usage
    return body


def error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error", "code": code,
                      "param": None}}


START = chunk({"role": "assistant", "content": "", "refusal": None})
USAGE = chunk(usage={"prompt_tokens": 30, "completion_tokens": 20, "total_tokens": 50})
DONE = "[DONE]"

CAPTURES: dict[str, list[dict[str, Any] | str]] = {
    # S1: the normal stream, no usage (the seed's projection carries none)
    "normal.sse": [START, chunk({"content": FIRST}), chunk({"content": SECOND}),
                   chunk({}, "stop"), DONE],
    # T1: the normal stream with its usage chunk (the seed's metadata event)
    "normal-usage.sse": [START, chunk({"content": FIRST}), chunk({"content": SECOND}),
                         chunk({}, "stop"), USAGE, DONE],
    # S2: the first delta, then the provider's failure, then a clean end
    "native-failure.sse": [START, chunk({"content": FIRST}),
                           error("Synthetic failure", "server_error"), DONE],
    # T2: the first delta, then the provider's exception, and the stream just ends
    "native-exception.sse": [START, chunk({"content": FIRST}),
                             error("Synthetic stream failure", "stream_error")],
    # T3: the first delta, then the token limit
    "length.sse": [START, chunk({"content": FIRST}), chunk({}, "length"), USAGE, DONE],
    # T4: the first delta, then EOF: no finish_reason, no [DONE]
    "drop.sse": [START, chunk({"content": FIRST})],
    # V4: the whole answer ending with a finish_reason no profile knows
    "unknown-finish.sse": [START, chunk({"content": FIRST}), chunk({"content": SECOND}),
                           chunk({}, "future_finish_reason"), USAGE, DONE],
    # V5: the whole answer, its ending, then an error before the stream drained
    "error-after-end.sse": [START, chunk({"content": FIRST}), chunk({"content": SECOND}),
                            chunk({}, "stop"), USAGE,
                            error("Synthetic late failure", "server_error"), DONE],
}


def sse(events: list[dict[str, Any] | str]) -> bytes:
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e, separators=(',', ':'))}\n\n"
             for e in events]
    return "".join(lines).encode()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, events in CAPTURES.items():
        (OUT / name).write_bytes(sse(events))


if __name__ == "__main__":
    main()
