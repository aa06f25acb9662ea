"""Folding a trace's rows so a page scales with the reader, not with the frame count.

Pure, over ``model.Row`` values, in two steps:

1. **How the bytes arrived.**  A lane's capture segments and keepalives (a live recording
   writes a segment before each chunk's frames; providers send pings) leave the timeline
   and become one summary row at the position of the lane's first one ("14 capture
   segments · 2 keepalives"), each still listed, with its position, inside it.  Nothing
   else moves.
2. **What the model said.**  A run of three or more text deltas of one content block,
   adjacent in what remains of the timeline and in one lane (same marks, no violation),
   becomes one row: its count, its joined text, its frames kept as ``members``.  Shorter
   runs stay one row per event, so a small trace (T8) still reads position by position.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Final

from tracestore.report.model import Row

#: The shortest run of deltas that folds (two deltas read fine as two rows).
FOLD_DELTAS_AT: Final = 3
_QUIET: Final = frozenset({"segment", "keepalive"})


def fold_rows(rows: Iterable[Row]) -> Iterator[Row]:
    return _fold_deltas(_fold_quiet(list(rows)))


def _is_quiet(row: Row) -> bool:
    return row.kind in _QUIET and not row.violations


def _fold_quiet(rows: list[Row]) -> list[Row]:
    by_lane: dict[int, list[Row]] = {}
    for row in rows:
        if _is_quiet(row):
            by_lane.setdefault(row.lane, []).append(row)
    firsts = {quiet[0].position: _summary(quiet) for quiet in by_lane.values()}
    return [firsts.get(row.position, row) for row in rows
            if not _is_quiet(row) or row.position in firsts]


def _delta_key(row: Row) -> str | None:
    if row.kind == "delta" and row.label == "text delta" and not row.violations:
        return f"{row.lane}:{row.block}:{','.join(row.marks)}"
    return None


def _fold_deltas(rows: Sequence[Row]) -> Iterator[Row]:
    i, n = 0, len(rows)
    while i < n:
        key = _delta_key(rows[i])
        end = i + 1
        while key is not None and end < n and _delta_key(rows[end]) == key:
            end += 1
        if end - i >= FOLD_DELTAS_AT:
            run = rows[i:end]
            yield replace(run[0], label=f"text delta ×{len(run)}",
                          text="".join(r.text or "" for r in run), native=None,
                          members=tuple(run), last_position=run[-1].position)
        else:
            yield from rows[i:end]
        i = end


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _summary(quiet: Sequence[Row]) -> Row:
    first = quiet[0]
    if len(quiet) == 1:
        return first
    segments = sum(1 for r in quiet if r.kind == "segment")
    keepalives = len(quiet) - segments
    label = " · ".join(p for p in (
        _plural(segments, "capture segment") if segments else "",
        _plural(keepalives, "keepalive") if keepalives else "") if p)
    return Row(first.position, first.lane, "fold", label,
               "how the bytes arrived, not what they say", (), (), None, None,
               tuple(quiet), quiet[-1].position)
