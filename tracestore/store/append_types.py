"""What an append takes and gives back: the canonical payload bytes, the positions written,
the result, the tap that follows an append in its transaction and the view a builder sees
inside it.  Plain values (no SQL here); ``store/log.py`` does the writing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tracestore.events import NewEvent, StoredEvent, to_json_bytes

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from tracestore.store.log import EventStore


def canonical_payload(event: Any) -> bytes:
    """The payload's stored bytes: compact JSON, key order as given (natives stay as decoded).

    pydantic's serializer writes non-ASCII as UTF-8 and keeps dict order; whatever it
    writes is what gets hashed, so the stored text itself is the canonical form.  (Lone
    surrogates are kept as escapes: see ``to_json_bytes``.)
    """
    return to_json_bytes(event)


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


class Positions(Sequence[int]):
    """The positions one append wrote, in order.  They are always consecutive (``head + 1 …
    head + n``: skipped ids take none), so they are held as a range -- a million-event
    ingest would otherwise keep a million ints alive at its peak.  Equal to a tuple or
    list of the same positions."""

    __slots__ = ("_range",)

    def __init__(self, first: int, count: int) -> None:
        self._range = range(first, first + count)

    def __len__(self) -> int:
        return len(self._range)

    def __getitem__(self, index: Any) -> Any:
        return self._range[index]

    def __iter__(self) -> Iterator[int]:
        return iter(self._range)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Positions):
            return self._range == other._range
        if isinstance(other, (tuple, list)):
            return len(other) == len(self._range) and all(
                a == b for a, b in zip(self._range, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._range))

    def __repr__(self) -> str:
        return f"Positions({tuple(self._range)!r})" if len(self) <= 8 else \
            f"Positions({self._range.start}…{self._range.stop - 1})"


@dataclass(frozen=True)
class AppendResult:
    positions: Positions
    "Positions of the events written, in order."
    skipped_ids: tuple[str, ...] = ()
    "Ids that were already stored (idempotent re-append): reported, not duplicated."
    blobs_stored: tuple[str, ...] = ()
    followed: Positions = field(default_factory=lambda: Positions(1, 0))
    "Positions of the events the append's ``tap`` added after them (its decisions)."
    then_ran: bool = False
    "``append_fresh_groups``: the committed transaction ran its ``then`` (``followed``)."
    trace_spans: tuple[tuple[str | None, int, int], ...] = ()
    """``(trace, version before, version after)`` of each trace the append wrote to: with
    ``before`` the trace's last ``trace_version`` when its lock was taken, a reader that
    has seen that trace up to ``before`` knows its rows follow on with no gap."""

    @property
    def appended(self) -> int:
        return len(self.positions)


class Tap(Protocol):
    """Follows an append inside its transaction (``append_with(..., tap=)``)."""

    def written(self, position: int, version: int, new: Any, digest: str) -> None:
        """One event was written at ``position`` (its stream version, the event, its hash)."""

    def then(self, view: WriteView, result: AppendResult) -> Sequence[NewEvent]:
        """The events to append after the batch, in the same transaction (may be empty)."""

    # Optional: ``settled(view)`` is called once everything (the batch and what ``then``
    # returned) is written, still inside the transaction (the ingest keeps the audit index).


@dataclass
class WriteView:
    """What a builder may see inside the write transaction of ``append_with``."""

    conn: Connection
    head_position: int
    recorded_at: str
    store: EventStore = field(repr=False)

    def read(self, **filters: Any) -> list[StoredEvent]:
        return self.store._read(self.conn, **filters)

    def has_event(self, event_id: str) -> bool:
        return bool(self.store._existing_ids(self.conn, [event_id]))
