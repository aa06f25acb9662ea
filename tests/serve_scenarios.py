"""Generated scenarios for the desk's tests, screenshots and benchmark: a trace of many
attempts (each a retry of the one before, all but the last stopped), and an attempt of
many frames.  Built on T8's task and profile (fixtures/seed003/t8.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
T8 = REPO / "fixtures" / "seed003" / "t8.json"
ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."


def _delta(reader: str, text: str) -> dict[str, Any]:
    return {"reader": reader, "event": {"contentBlockDelta": {
        "contentBlockIndex": 0, "delta": {"text": text}}}}


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


REQUEST = {"model": "us.anthropic.claude-haiku-4-5-20251001-v1:0", "region": "us-east-1",
           "inferenceConfig": {"maxTokens": 256, "temperature": 0.2}}
#: Recorded wall-clock times (observed_at) start here; each step is 40 ms after the last,
#: the first text 120 ms after its attempt opened.
T0 = "2026-10-09T10:00:00"


def _at(ms: int) -> str:
    import datetime as dt

    return (dt.datetime.fromisoformat(T0) + dt.timedelta(milliseconds=ms)).isoformat(
        timespec="milliseconds") + "+00:00"


def _timed(steps: list[dict[str, Any]], start_ms: int) -> int:
    """Stamp ``steps`` (one attempt's) with times: open at ``start_ms``, the next step
    120 ms later, then 40 ms apart.  Returns the time after the last."""
    ms = start_ms
    for i, step in enumerate(steps):
        step["at"] = _at(ms)
        ms += 120 if i == 0 else 40
    return ms


def many_attempts(trace: str = "t25", attempts: int = 25) -> dict[str, Any]:
    """``attempts`` attempts in one trace: 1..n-1 stopped after a few words, n released.
    Each has request settings and recorded times (first token 160 ms after it opened:
    the message start at 120 ms, the first delta 40 ms later)."""
    base = json.loads(T8.read_text("utf-8"))
    steps: list[dict[str, Any]] = []
    clock = 0
    for n in range(1, attempts + 1):
        reader, attempt = f"r{n}", f"{trace}-{n:02d}"
        mine: list[dict[str, Any]] = []
        opened: dict[str, Any] = {"open": reader, "attempt": attempt,
                                  "api": "bedrock-converse-stream", "request": REQUEST}
        if n > 1:
            opened["retry_of"] = f"{trace}-{n - 1:02d}"
        mine += [opened, {"reader": reader, "event": {"messageStart": {"role": "assistant"}}}]
        words = _words(ANSWER)
        if n < attempts:
            mine += [_delta(reader, w) for w in words[: 2 + n % 5]]
            mine.append({"reader": reader, "local": "stop"})
            clock = _timed(mine, clock)
            steps += mine
            continue
        mine += [_delta(reader, w) for w in words]
        mine += [{"reader": reader, "event": {"contentBlockStop": {"contentBlockIndex": 0}}},
                  {"reader": reader, "event": {"messageStop": {"stopReason": "end_turn"}}},
                  {"reader": reader, "event": {"metadata": {
                      "usage": {"inputTokens": 30, "outputTokens": 20, "totalTokens": 50},
                      "metrics": {"latencyMs": 900}}}},
                  {"reader": reader, "local": "drain", "outcome": "clean"}]
        clock = _timed(mine, clock)
        steps += mine
    return {"trace": trace, "description": f"{attempts} attempts, each a retry of the last",
            "origin": "synthetic projection", "profile": base["profile"],
            "task": base["task"], "steps": steps}


def long_attempt(trace: str = "t10k", frames: int = 10_000) -> dict[str, Any]:
    """One released attempt of ``frames`` frames (one-word text deltas)."""
    base = json.loads(T8.read_text("utf-8"))
    reader = "r1"
    words = _words(ANSWER)
    deltas = max(1, frames - 4)
    steps: list[dict[str, Any]] = [
        {"open": reader, "attempt": f"{trace}-a", "api": "bedrock-converse-stream"},
        {"reader": reader, "event": {"messageStart": {"role": "assistant"}}}]
    steps += [_delta(reader, words[i % len(words)] if i < deltas - len(words)
                     else words[i - (deltas - len(words))]) for i in range(deltas)]
    steps += [{"reader": reader, "event": {"contentBlockStop": {"contentBlockIndex": 0}}},
              {"reader": reader, "event": {"messageStop": {"stopReason": "end_turn"}}},
              {"reader": reader, "local": "drain", "outcome": "clean"}]
    return {"trace": trace, "description": f"one attempt of {frames} frames",
            "origin": "synthetic projection", "profile": base["profile"],
            "task": {"description": "any text"}, "steps": steps}


def write(path: Path, scenario: dict[str, Any]) -> Path:
    path.write_text(json.dumps(scenario), encoding="utf-8")
    return path
