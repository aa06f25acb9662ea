"""The tree head of a store: one RFC 6962 Merkle root over every trace's chain head.

Each trace is its own hash chain, so a chain alone cannot show that a trace lost its last
events or vanished whole: what is left is again a valid chain.  Certificate Transparency
closes the same gap with a signed tree head.  Here the leaves are the traces' heads --
``(trace id, trace version, hash)`` of each trace's last event, the store's own chain
(events without a trace) keyed ``""`` -- sorted by the UTF-8 bytes of the key, and
``merkle.root`` hashes them.  A head taken *as of a position* counts only the events up to
it; positions below a settled read's end never gain rows later (``LogReads.settled_sql``),
so the same head can be recomputed from the store at any later time, however it grew.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tracestore.store import merkle

Heads = Mapping[str | None, tuple[int, str]]


@dataclass(frozen=True)
class TreeHead:
    position: int
    "The last position the head covers."
    size: int
    "How many traces (leaves)."
    root: str
    "The Merkle root, hex."


@dataclass(frozen=True)
class Leaf:
    trace_id: str | None
    version: int
    hash: str

    @property
    def key(self) -> str:
        return self.trace_id or ""

    def data(self) -> bytes:
        return merkle.trace_leaf(self.key, self.version, self.hash)


def leaves(heads: Heads) -> list[Leaf]:
    """The leaves in tree order: by the UTF-8 bytes of the trace key."""
    return sorted((Leaf(trace, version, digest) for trace, (version, digest) in heads.items()),
                  key=lambda leaf: leaf.key.encode("utf-8", "surrogatepass"))


def tree_head(heads: Heads, position: int) -> TreeHead:
    ordered = leaves(heads)
    return TreeHead(position, len(ordered), merkle.root([leaf.data() for leaf in ordered]).hex())


def inclusion(ordered: list[Leaf], trace_id: str | None) -> tuple[int, Leaf, list[str]]:
    """(index, leaf, proof as hex) of ``trace_id``'s last leaf among ``ordered`` leaves
    (a log of heads holds one per checkpoint the trace moved in: the last is its signed
    head); KeyError when the trace has no leaf."""
    for index in range(len(ordered) - 1, -1, -1):
        leaf = ordered[index]
        if leaf.trace_id == trace_id or (trace_id is None and leaf.key == ""):
            hashes = [merkle.leaf_hash(item.data()) for item in ordered]
            return index, leaf, [step.hex() for step in merkle.inclusion_proof(hashes, index)]
    raise KeyError(trace_id)


def included(leaf: Leaf, index: int, size: int, proof: Iterable[str], root: str) -> bool:
    """Whether ``proof`` shows ``leaf`` at ``index`` of the tree of ``size`` with ``root``."""
    try:
        steps = [bytes.fromhex(step) for step in proof]
        want = bytes.fromhex(root)
    except ValueError:
        return False
    return merkle.verify_inclusion(merkle.leaf_hash(leaf.data()), index, size, steps, want)


__all__ = ["Leaf", "TreeHead", "included", "inclusion", "leaves", "tree_head"]
