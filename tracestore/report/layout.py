"""Folding a trace's rows so a page scales with the reader, not with the frame count.

Pure, over ``model.Row`` values: a run of three or more text deltas of one content block,
adjacent in the timeline and in one lane, with the same marks and no violation, becomes one
row (its count, its joined text, its frames kept as ``members``); a run of capture segments
and keepalives becomes one summary row.  Shorter runs stay one row per event, so a small
trace (T8) still reads position by position.  Nothing is reordered: a run ends at the next
row of the timeline, whichever lane it is in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Final

from tracestore.report.model import Row

#: The shortest run of deltas that folds (two deltas read fine as two rows).
FOLD_DELTAS_AT: Final = 3
_QUIET: Final = frozenset({"segment", "keepalive"})


def _foldable(row: Row) -> str | None:
    """The run a row can join: ``delta:LANE:BLOCK:MARKS`` or ``quiet:LANE``, or None."""
    if row.violations:
        return None
    if row.kind == "delta" and row.label == "text delta":
        return f"delta:{row.lane}:{row.block}:{','.join(row.marks)}"
    if row.kind in _QUIET:
        return f"quiet:{row.lane}"
    return None


def fold_rows(rows: Iterable[Row]) -> Iterator[Row]:
    run: list[Row] = []
    key: str | None = None
    for row in rows:
        mine = _foldable(row)
        if mine is not None and mine == key:
            run.append(row)
            continue
        yield from _close(run)
        run, key = ([row], mine) if mine is not None else ([], None)
        if mine is None:
            yield row
    yield from _close(run)


def _close(run: list[Row]) -> Iterator[Row]:
    if not run:
        return
    first = run[0]
    if first.kind == "delta":
        if len(run) < FOLD_DELTAS_AT:
            yield from run
            return
        yield replace(first, label=f"text delta ×{len(run)}",
                      text="".join(r.text or "" for r in run), native=None,
                      members=tuple(run), last_position=run[-1].position)
        return
    if len(run) == 1:
        yield first
        return
    segments = sum(1 for r in run if r.kind == "segment")
    keepalives = len(run) - segments
    parts = [f"{segments} capture segment{'s' if segments != 1 else ''}" if segments else "",
             f"{keepalives} keepalive{'s' if keepalives != 1 else ''}" if keepalives else ""]
    yield Row(first.position, first.lane, "fold", " · ".join(p for p in parts if p),
              "how the bytes arrived, not what they say", first.marks, (),
              None, None, tuple(run), run[-1].position)
