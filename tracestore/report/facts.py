"""What the page's header says about each attempt, and the word diffs of bad writes.

Only what the recording shows: request settings as ``attempt.started`` recorded them, the
model the frames name, the last usage the normalizer observed, and -- where the events
carry wall-clock ``observed_at`` times -- time to first token and duration.  A live
recording (``capture.segment`` events: the recorder appends each chunk's frames as the
chunk arrives) times its frames by when the store recorded them, so its first token is
measured from the store's time of the attempt's start to that of its first text frame.
A fact the recording does not hold is None (the page says "not recorded"), never guessed.
Pure.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tracestore.events import StoredEvent

#: The violations whose written text is shown as a diff against the released answer.
DIFFED: Final = frozenset({"answer_mismatch", "old_attempt_text_in_answer"})
_MODEL_KEYS: Final = ("model", "modelVersion", "model_id", "modelId")


@dataclass(frozen=True, slots=True)
class AttemptFacts:
    request: tuple[tuple[str, str], ...]
    model: str | None
    usage: tuple[tuple[str, str], ...]
    first_token_ms: float | None
    duration_ms: float | None
    frames: int
    first_token_after: str = "open"
    """What ``first_token_ms`` is measured from: ``open`` (the attempt's start, recorded
    before its bytes), or ``first bytes`` (a start recorded with the first bytes, as a
    recorder that learns the API from them does: the request's own time is not recorded)."""


#: Keys ``_model_in`` reads; a frame with none of them names no model (nearly every delta).
_MODEL_SEARCHED: Final = frozenset({*_MODEL_KEYS, "message", "response", "metadata"})


def _model_in(native: Any, depth: int = 0) -> str | None:
    if (not isinstance(native, Mapping) or depth > 2
            or native.keys().isdisjoint(_MODEL_SEARCHED)):
        return None
    for key in _MODEL_KEYS:
        value = native.get(key)
        if isinstance(value, str) and value:
            return value
    for key in ("message", "response", "metadata"):
        found = _model_in(native.get(key), depth + 1)
        if found:
            return found
    return None


def _when(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _flat(mapping: Mapping[str, Any] | None, prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in (mapping or {}).items():
        if isinstance(value, Mapping):
            out.extend(_flat(value, f"{prefix}{key}."))
        else:
            out.append((f"{prefix}{key}", str(value)))
    return out


def attempt_facts(own: Sequence[StoredEvent], frames: Sequence[tuple]) -> AttemptFacts:
    """The header facts of one attempt, from its own events and its frames as the report
    described them (``model.FrameRow``: the normalizer's kinds and usage)."""
    start = next((e.event for e in own if e.type == "attempt.started"), None)
    request = tuple(_flat(getattr(start, "request", None)))
    described = {row[0]: row for row in frames}
    model = next((v for k, v in request if k.rsplit(".", 1)[-1] in _MODEL_KEYS), None)
    usage: Mapping[str, Any] | None = None
    first_text: dt.datetime | None = None
    first_recorded: StoredEvent | None = None
    count, times = 0, []
    opened = _when(getattr(start, "observed_at", None))
    live = any(e.type == "capture.segment" for e in own)
    for stored in own:
        when = _when(getattr(stored.event, "observed_at", None))
        if when is not None:
            times.append(when)
        if stored.type != "frame.received":
            continue
        count += 1
        if model is None:
            model = _model_in(stored.event.native)
        row = described.get(stored.position)
        if row is None:
            continue
        if row[5] is not None:
            usage = row[5]
        if row[1] == "delta" and first_text is None and first_recorded is None:
            if when is not None:
                first_text = when
            elif live:
                first_recorded = stored
    ttft = ((first_text - opened).total_seconds() * 1000
            if first_text is not None and opened is not None else None)
    after = "open"
    if ttft is None and first_recorded is not None:
        ttft, after = _recorded_ttft(own, first_recorded)
    duration = ((max(times) - opened).total_seconds() * 1000
                if opened is not None and len(times) > 1 else None)
    return AttemptFacts(request, model, tuple(_flat(usage)), ttft, duration, count, after)


def _recorded_ttft(own: Sequence[StoredEvent], first: StoredEvent) -> tuple[float | None, str]:
    """A live attempt's time to first token by the store's clock: its start's recorded
    time to its first text frame's (both the store's, so one clock).  A start recorded in
    the same append as the first bytes (same recorded time as the first segment) measures
    from those bytes, and says so."""
    start = next((e for e in own if e.type == "attempt.started"), None)
    segment = next((e for e in own if e.type == "capture.segment"), None)
    if start is None:
        return None, "open"
    after = ("first bytes" if segment is not None
             and segment.recorded_at == start.recorded_at else "open")
    begun, seen = _aware(start.recorded_at), _aware(first.recorded_at)
    return max((seen - begun).total_seconds() * 1000, 0.0), after


def _aware(when: dt.datetime) -> dt.datetime:
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


_WORDS: Final = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) pieces: ``same``, ``del`` (in ``old`` only), ``ins`` (in ``new`` only)."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("ins", "".join(b[j1:j2])))
    return out


def write_diffs(events: Sequence[StoredEvent], lanes: Sequence[Any],
                violations: Sequence[Any]) -> dict[int, list[tuple[str, str]]]:
    """Write position → diff of the released answer (old) against what was written."""
    answers = {lane.attempt_id: lane.decision.answer for lane in lanes}
    released = next((a for a in answers.values() if a is not None), None)
    wanted = {v.position: v.attempt_id for v in violations if v.code in DIFFED}
    out = {}
    for stored in events:
        if stored.position in wanted and stored.type == "destination.written":
            answer = answers.get(wanted[stored.position]) or released
            if answer is not None:
                out[stored.position] = word_diff(answer, stored.event.text)
    return out
