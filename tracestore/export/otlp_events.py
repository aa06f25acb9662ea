"""The span events of one attempt: the frames summarized so that nothing is lost.

Text-like deltas (text, reasoning, tool-argument fragments) that follow each other in the
log and belong to the same block become ONE ``tracestore.text_block`` event (its frame
count, first and last position, and with content its joined text); any other event of the
attempt in between closes the run, so a late delta after a Stop is its own block event.
Every other frame (message start, block start/stop, final text, usage, terminal, error,
unknown ...) is its own ``tracestore.frame`` event, and so is every Stop, drain, semantic
judgement, release decision, destination write, rejected frame, model decision and review
record.  A 10,000-frame answer is a handful of events, not 10,000.

Content (model text, native frames, reviewer values stay in) follows ``Content``: ``none``
exports positions, kinds and digests only; ``full`` exports text; ``digest`` (``--redact
text``) exports ``sha256:`` digests in place of every model text.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracestore.events import StoredEvent

#: Observation kinds whose frames fold into their block's text event.
FOLDED = frozenset({"text_delta", "reasoning_delta", "tool_call_delta", "keepalive"})
_GROUP = {"text_delta": "text", "reasoning_delta": "reasoning",
          "tool_call_delta": "tool_arguments", "keepalive": "keepalive"}


class Content(str, enum.Enum):
    none = "none"
    full = "full"
    digest = "digest"


@dataclass
class SpanEvent:
    name: str
    position: int
    attributes: dict[str, Any]
    stored: StoredEvent
    "The event whose time the span event carries (a block: its first frame)."


@dataclass
class _Run:
    group: str
    block: Any
    first: StoredEvent
    last_position: int
    parts: list[str] = field(default_factory=list)
    frames: int = 0


def observe(frames: Sequence[StoredEvent]) -> dict[int, list[Any]]:
    """Position → the normalizer's observations of that frame ({} for an unknown API)."""
    from tracestore.errors import InputError
    from tracestore.providers.base import make_normalizer

    try:
        normalizer = make_normalizer(frames[0].event.api) if frames else None
    except InputError:
        return {}
    if normalizer is None:
        return {}
    return {f.position: list(normalizer.feed(f.event.native, f.event.event_name))
            for f in frames}


def summarize(mine: Sequence[StoredEvent], observed: dict[int, list[Any]], content: Content,
              redactor: Any) -> list[SpanEvent]:
    """The attempt's span events in log order (see the module doc)."""
    out: list[SpanEvent] = []
    run: _Run | None = None
    previous_set: dict[tuple[str, str], int] = {}

    def close() -> None:
        nonlocal run
        if run is not None:
            out.append(_block_event(run, content, redactor))
            run = None

    for stored in mine:
        if stored.type == "frame.received":
            obs = observed.get(stored.position, [])
            kinds = [o.kind for o in obs] or list(stored.event.kinds)
            if kinds and all(k in FOLDED for k in kinds):
                group = _GROUP[kinds[0]]
                block = next((o.block for o in obs), None)
                if run is None or (run.group, run.block) != (group, block):
                    close()
                    run = _Run(group, block, stored, stored.position)
                run.frames += 1
                run.last_position = stored.position
                run.parts.extend(o.text or o.arguments or "" for o in obs)
                continue
        close()
        made = _event(stored, observed.get(stored.position, []), content, redactor,
                      previous_set)
        if made is not None:
            out.append(made)
    close()
    return out


def _block_event(run: _Run, content: Content, redactor: Any) -> SpanEvent:
    attrs: dict[str, Any] = {
        "tracestore.position": run.first.position, "tracestore.kind": run.group,
        "tracestore.frames": run.frames, "tracestore.last_position": run.last_position,
    }
    if run.block is not None:
        attrs["tracestore.block"] = run.block
    if run.group != "keepalive":
        joined = "".join(run.parts)
        if content is Content.full:
            attrs["tracestore.text"] = joined
        elif content is Content.digest:
            attrs["tracestore.text"] = redactor.text(joined)
    name = "tracestore.keepalives" if run.group == "keepalive" else "tracestore.text_block"
    return SpanEvent(name, run.first.position, attrs, run.first)


def _event(stored: StoredEvent, obs: list[Any], content: Content, redactor: Any,
           previous_set: dict[tuple[str, str], int]) -> SpanEvent | None:
    event, kind = stored.event, stored.type
    attrs: dict[str, Any] = {"tracestore.position": stored.position}
    hide = content is Content.none
    if kind == "frame.received":
        attrs["tracestore.observations"] = [o.kind for o in obs] or list(event.kinds)
        attrs["tracestore.native_type"] = [o.native_type for o in obs] or ["?"]
        for o in obs:
            for name in ("stop_reason", "status", "error_code"):
                if getattr(o, name):
                    attrs[f"tracestore.{name}"] = getattr(o, name)
        if content is not Content.none:
            native = redactor.event(event).native if content is Content.digest else event.native
            attrs["tracestore.native"] = json.dumps(native, ensure_ascii=False)
        return SpanEvent("tracestore.frame", stored.position, attrs, stored)
    if kind == "local.stopped":
        return SpanEvent("tracestore.local_stop", stored.position,
                         {**attrs, "tracestore.by": event.by or ""}, stored)
    if kind == "transport.drained":
        attrs["tracestore.outcome"] = event.outcome
        if event.detail:
            attrs["tracestore.detail"] = event.detail
        return SpanEvent("tracestore.drain", stored.position, attrs, stored)
    if kind == "release.decided":
        return SpanEvent("tracestore.release_decision", stored.position, {
            **attrs, "tracestore.release.status": event.status,
            "tracestore.release.eligible": event.eligible,
            "tracestore.release.reasons": list(event.reasons)}, stored)
    if kind == "destination.written":
        attrs.update({"tracestore.destination": event.destination,
                      "tracestore.sha256": event.sha256, "tracestore.source": event.source})
        if event.destination == "progress" or content is Content.full:
            attrs["tracestore.text"] = event.text
        elif content is Content.digest:
            attrs["tracestore.text"] = redactor.text(event.text)
        return SpanEvent("tracestore.destination_write", stored.position, attrs, stored)
    if kind == "semantic.judged":
        return SpanEvent("tracestore.semantic_judgement", stored.position,
                         {**attrs, "tracestore.verdict": event.verdict,
                          "tracestore.by": event.by}, stored)
    if kind == "frame.rejected":
        attrs["tracestore.code"] = event.code
        if event.detail and not hide:
            attrs["tracestore.detail"] = event.detail
        return SpanEvent("tracestore.frame_rejected", stored.position, attrs, stored)
    if kind == "model.decision":
        return SpanEvent("tracestore.model_decision", stored.position,
                         {**attrs, "tracestore.stage": event.stage,
                          "tracestore.reason": event.reason or ""}, stored)
    if kind == "review.field_set":
        key = (event.template, event.field)
        attrs.update({"tracestore.review.template": event.template,
                      "tracestore.review.field": event.field,
                      "tracestore.review.value": event.value,
                      "tracestore.review.reviewer": event.reviewer,
                      "tracestore.review.evidence": list(event.evidence)})
        name = "tracestore.review.field_set"
        if key in previous_set:
            attrs["tracestore.review.amends_position"] = previous_set[key]
            name = "tracestore.review.amended"
        previous_set[key] = stored.position
        return SpanEvent(name, stored.position, attrs, stored)
    if kind == "review.approved":
        return SpanEvent("tracestore.review.approved", stored.position,
                         {**attrs, "tracestore.review.template": event.template,
                          "tracestore.review.reviewer": event.reviewer}, stored)
    return None
