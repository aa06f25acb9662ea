"""How review records say things: bounded quotations, short lists, positions.

Shared by every deriver (``derive_attempt``, ``derive_trace``, ``derive_review`` and the
agent's), so the record cites events and cuts model text the same way in every field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

#: Model text quoted in the record is cut to this many characters (the full text is in the
#: events; the record only has to show which text it means).
QUOTE_CHARS: Final = 160
#: Distinct native ids, and anomalies, listed before "+N more".
MAX_LISTED: Final = 5


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """Untrusted text as a bounded quotation (escaping happens at render time)."""
    return '"' + (text if len(text) <= limit else text[: limit - 1] + "…") + '"'


def listed(items: list[str], limit: int = MAX_LISTED) -> str:
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" (+{more} more)" if more > 0 else "")


def plural(count: int, noun: str) -> str:
    """``1 delta``, ``2 deltas``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def positions(values: Iterable[int]) -> str:
    """``#5, #8`` — how a record cites events."""
    return ", ".join(f"#{p}" for p in values)


def grouped(items: Iterable[tuple[str, str, str | None, int]]
            ) -> dict[tuple[str, str, str | None], list[int]]:
    """Repeated facts (one anomaly per tool-argument delta …) folded to one entry each."""
    groups: dict[tuple[str, str, str | None], list[int]] = {}
    for code, native, detail, position in items:
        groups.setdefault((code, native, detail), []).append(position)
    return groups


def spread(found: list[int]) -> str:
    """``#5`` or ``#17, #18, #19 … #23 (7 times)``: short, and still naming first and last."""
    if len(found) <= 3:
        return positions(found)
    return f"{positions(found[:3])} … #{found[-1]} ({len(found)} times)"


def capital(text: str) -> str:
    """The sentence with its first letter in upper case."""
    return text[:1].upper() + text[1:]
