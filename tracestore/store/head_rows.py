"""The store's rows at given trace heads: what a checkpoint's older leaves are checked
against (``head_log``).  One indexed look-up per head, a batch of them per query, through
the unique ``(trace, trace_version)`` index of either dialect."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracestore.store.tree_head import Leaf

#: Heads asked in one query (each is two bound values).
BATCH = 200


def stored_hashes(store: Any, leaves: Sequence[Leaf]) -> dict[tuple[str, int], str]:
    """``{(trace key, version): hash}`` of the rows the store holds at ``leaves``' heads
    (a head it does not hold is absent)."""
    mark = store._mark
    key = "trace_key" if store._dialect == "postgresql" else "coalesce(trace_id, '')"
    found: dict[tuple[str, int], str] = {}
    wanted = sorted({(leaf.key, leaf.version) for leaf in leaves})
    for start in range(0, len(wanted), BATCH):
        chunk = wanted[start:start + BATCH]
        where = " OR ".join([f"({key} = {mark} AND trace_version = {mark})"] * len(chunk))
        params = [value for pair in chunk for value in pair]
        for trace, version, digest in store.fetch_driver(
                f"SELECT {key}, trace_version, hash FROM ts_events WHERE {where}", params,
                during="reading the signed heads"):
            found[(str(trace), int(version))] = str(digest)
    return found


def first_unheld(store: Any, leaves: Sequence[Leaf]) -> Leaf | None:
    """The first of ``leaves`` whose row the store no longer holds with that hash."""
    held = stored_hashes(store, leaves)
    for leaf in leaves:
        if held.get((leaf.key, leaf.version)) != leaf.hash:
            return leaf
    return None


__all__ = ["first_unheld", "stored_hashes"]
