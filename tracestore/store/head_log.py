"""The log of trace heads that successive checkpoints sign, so that one checkpoint can be
proved to extend another as in Certificate Transparency (RFC 6962 §2.1.2).

A first checkpoint's leaves are every trace's head, sorted by trace key
(``tree_head.leaves``).  A checkpoint made with ``--extends PREV`` keeps PREV's leaves as
they are and appends, in the same key order, one leaf for each trace whose head moved since
its latest leaf (and one for each new trace).  The leaves only ever grow at the end, so:

* the signed root of the older checkpoint is the root of a prefix of the newer one's
  leaves, and ``merkle.consistency_proof`` shows it with a handful of hashes that anyone
  holding the two signed roots can check (``consistent``), without the store;
* each trace's *latest* leaf is its head at the signed position: ``verify --checkpoint``
  checks the store's heads against those (``latest_heads``), as for a first checkpoint;
* each earlier leaf of a trace is a head the trace had when an older checkpoint was
  signed: the store must still hold that row with that hash (``history_rows`` lists them),
  so a trace rewritten and re-hashed between two checkpoints is caught even when the
  rewrite was signed again.

Everything here is pure: leaves in, leaves, roots and proofs out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tracestore.store import merkle
from tracestore.store.tree_head import Leaf


def log_root(leaves: Sequence[Leaf]) -> str:
    """The RFC 6962 root of ``leaves`` in log order, hex (the empty tree's for none)."""
    return merkle.root([leaf.data() for leaf in leaves]).hex()


def latest_heads(leaves: Iterable[Leaf]) -> dict[str | None, tuple[int, str]]:
    """Each trace's latest leaf, as ``tree_head`` heads ``{trace: (version, hash)}``."""
    heads: dict[str | None, tuple[int, str]] = {}
    for leaf in leaves:
        heads[None if leaf.key == "" else leaf.trace_id] = (leaf.version, leaf.hash)
    return heads


def extension(previous: Sequence[Leaf], current: Sequence[Leaf]) -> tuple[list[Leaf], list[str]]:
    """``(leaves to append, traces that went back)``: each of ``current`` (heads now, in
    tree order) whose trace's latest leaf in ``previous`` differs.  A trace whose head now
    has a lower version than its latest leaf, or that has no head now, went back (events
    deleted or the trace dropped): the caller refuses to sign over it."""
    before = latest_heads(previous)
    appended, back = [], []
    now = {leaf.key: leaf for leaf in current}
    for trace, (version, _digest) in before.items():
        head = now.get(trace or "")
        if head is None or head.version < version:
            back.append(trace or "")
    for leaf in current:
        if before.get(None if leaf.key == "" else leaf.trace_id) != (leaf.version, leaf.hash):
            appended.append(leaf)
    return appended, sorted(back)


def history(leaves: Sequence[Leaf]) -> list[Leaf]:
    """The leaves that are not their trace's latest: heads a trace had at an older
    checkpoint, whose rows the store must still hold unchanged."""
    latest: dict[str, int] = {}
    for index, leaf in enumerate(leaves):
        latest[leaf.key] = index
    return [leaf for index, leaf in enumerate(leaves) if latest[leaf.key] != index]


def consistency(leaves: Sequence[Leaf], old_size: int) -> list[str]:
    """The RFC 6962 proof, hex, that the first ``old_size`` of ``leaves`` are a prefix."""
    return [step.hex() for step in merkle.consistency_proof(
        [merkle.leaf_hash(leaf.data()) for leaf in leaves], old_size)]


def consistent(old_size: int, old_root: str, new_size: int, new_root: str,
               proof: Iterable[str]) -> bool:
    """Whether ``proof`` shows the log of ``new_size`` leaves with ``new_root`` extends the
    one of ``old_size`` with ``old_root`` (untrusted input: malformed means False)."""
    try:
        steps = [bytes.fromhex(step) for step in proof]
        old, new = bytes.fromhex(old_root), bytes.fromhex(new_root)
    except (ValueError, TypeError):
        return False
    return merkle.verify_consistency(old_size, new_size, old, new, steps)


__all__ = ["consistency", "consistent", "extension", "history", "latest_heads",
           "log_root"]
