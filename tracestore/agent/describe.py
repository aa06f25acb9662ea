"""One line per agent event, for timelines (callers escape it: it holds model text)."""

from __future__ import annotations

from typing import Any

AGENT_EVENT_TYPES = frozenset({"run.opened", "model.called", "model.decision", "tool.observed",
                               "run.finished", "run.graded"})


def _what(decision: Any) -> str:
    action = decision.get("action")
    if action == "search":
        return f"search {str(decision.get('query', ''))!r}"
    if action == "read":
        return f"read {str(decision.get('source_id', ''))!r}"
    return str(action)


def describe(event: Any) -> str:
    kind = event.type
    if kind == "run.opened":
        return f"▶ run ({event.mode} path): {event.question}"
    if kind == "model.called":
        total = (event.usage or {}).get("totalTokenCount")
        return f"model call {event.index}" + (f" ({total} tokens)" if total is not None else
                                              "" if event.usage else " (usage absent)")
    if kind == "model.decision":
        what = _what(event.decision)
        if event.stage == "proposed":
            return f"proposes {what}"
        implied = " (implied)" if event.implied else ""
        if event.stage == "refused":
            return f"✖ refused {what}: {event.reason}{implied}"
        return f"✔ admitted {what}{implied}"
    if kind == "tool.observed":
        result = event.result
        if event.tool == "search":
            ids = [c.get("source_id") for c in result.get("candidates", ())
                   if isinstance(c, dict)]
            return f"search result: {', '.join(map(str, ids)) or 'nothing'}"
        text = result.get("text")
        size = len(text.encode("utf-8")) if isinstance(text, str) else 0
        return f"read {result.get('source_id')} ({size} bytes)"
    if kind == "run.finished":
        return f"■ run {event.status} ({event.reason})"
    if kind == "run.graded":
        return f"recorded checks: outcome {event.checks.get('outcome')}"
    return kind
