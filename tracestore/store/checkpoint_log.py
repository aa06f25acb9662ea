"""Checkpoints that extend older ones (``tracestore-checkpoint-3``): signing one over the
log of heads, the expectation ``verify`` checks a store against, and the consistency of
two checkpoints (``store.head_log`` says why the leaves are a log)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracestore.errors import InputError, StoreError
from tracestore.store import checkpoint as ck
from tracestore.store import head_log
from tracestore.store.chain import Expected
from tracestore.store.tree_head import Leaf, tree_head


def signed_log(path: Path, key: Path | None) -> tuple[ck.Checkpoint, list[Leaf]]:
    """A checkpoint whose signature holds, with the leaves beside it, which must be the
    ones it signed (their log root and count); a first-format checkpoint has none."""
    signed = ck.read_checkpoint(path)
    ck.check_signature(signed, key)
    return signed, signed_leaves(path, signed)


def signed_leaves(path: Path, signed: ck.Checkpoint) -> list[Leaf]:
    """The leaves beside the checkpoint ``signed`` read from ``path`` (its signature
    checked already), which must be the ones it signed."""
    if signed.root is None:
        raise InputError(f"{path} is a {ck.FORMAT} checkpoint: it signs one row, not the "
                         "traces' heads, and cannot be extended or proved consistent",
                         code="invalid_checkpoint", path=str(path))
    leaves = ck.read_leaves(ck.leaves_path(path))
    if (len(leaves), head_log.log_root(leaves)) != (signed.tree_size, signed.root):
        raise InputError(f"{ck.leaves_path(path)} is not the leaves {path} signed ("
                         f"{len(leaves)} leaves; {signed.tree_size} signed)",
                         code="invalid_checkpoint", path=str(path))
    return leaves


def expected(signed: ck.Checkpoint, leaves: list[Leaf]) -> Expected:
    """What ``verify`` checks the store against: every trace's head as of the signed
    position is its latest leaf (for a -2 checkpoint these are all its leaves)."""
    if not signed.log:
        return Expected(signed.position, signed.hash, signed.root, signed.tree_size)
    head = tree_head(head_log.latest_heads(leaves), signed.position)
    return Expected(signed.position, "", head.root, head.size)


def extend(store: Any, previous: ck.Checkpoint, previous_leaves: list[Leaf],
           position: int) -> tuple[list[Leaf], int]:
    """The log of heads as of ``position`` extending ``previous``: ``(all leaves, how many
    were appended)``.  Refused (``checkpoint_not_extended``, nothing signed) when the store
    does not extend what ``previous`` signed: a position before it, a trace that went back
    or vanished, or a signed head whose row the store no longer holds unchanged."""
    if position < previous.position:
        raise _not_extended(f"the store ends at position {position}, before the position "
                            f"{previous.position} the checkpoint extended signed")
    current = store.tree_leaves(position)
    appended, back = head_log.extension(previous_leaves, current)
    if back:
        raise _not_extended(f"trace {back[0]!r} holds fewer events than the checkpoint "
                            f"extended signed ({len(back)} trace(s) went back or vanished)")
    from tracestore.store.head_rows import first_unheld

    latest = head_log.latest_heads(previous_leaves)
    unheld = first_unheld(store, [Leaf(trace, version, digest) for trace, (version, digest)
                                  in latest.items()])
    if unheld is not None:
        raise _not_extended(f"trace {unheld.key!r} no longer holds version {unheld.version} "
                            "as the checkpoint extended signed it (rewritten)")
    return [*previous_leaves, *appended], len(appended)


def _not_extended(reason: str) -> StoreError:
    return StoreError(f"refusing to sign: {reason}", code="checkpoint_not_extended")


def consistency(old: ck.Checkpoint, new: ck.Checkpoint,
                new_leaves: list[Leaf]) -> dict[str, Any]:
    """The RFC 6962 proof that ``new``'s log extends ``old``'s, checked against the two
    signed roots as any verifier holding them would (``checkpoints_inconsistent`` when it
    does not hold: the newer log rewrote or dropped an older leaf)."""
    assert old.tree_size is not None and old.root is not None
    assert new.tree_size is not None and new.root is not None
    proof: list[str] = []
    ok = 0 < old.tree_size <= new.tree_size
    if ok:
        proof = head_log.consistency(new_leaves, old.tree_size)
        ok = head_log.consistent(old.tree_size, old.root, new.tree_size, new.root, proof)
    if not ok:
        why = ("it holds fewer leaves: is it the older one?" if new.tree_size < old.tree_size
               else "its log rewrote or dropped older heads")
        raise StoreError(f"the checkpoint at position {new.position} ({new.tree_size} "
                         f"leaves) does not extend the one at position {old.position} "
                         f"({old.tree_size} leaves): {why}", code="checkpoints_inconsistent")
    return {"old": {"position": old.position, "tree_size": old.tree_size, "root": old.root},
            "new": {"position": new.position, "tree_size": new.tree_size, "root": new.root},
            "proof": proof, "consistent": True}


__all__ = ["consistency", "expected", "extend", "signed_leaves", "signed_log"]
