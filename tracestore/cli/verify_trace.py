"""``tracestore verify --trace T [--checkpoint FILE]``: one trace's chain, and its inclusion
in a signed tree head, without reading any other trace (load, check, render)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracestore.cli.common import console, emit_json, open_store, term_text
from tracestore.errors import ChainBroken
from tracestore.store.chain import VerifyResult

NO_POSITION = 2**63 - 1


def verify_one_trace(trace_id: str, checkpoint: Path | None, key: Path | None,
                     db: str | None, as_json: bool) -> None:
    from tracestore.store import checkpoint as ck
    from tracestore.store.verify import verify_trace_rows

    signed = None
    if checkpoint is not None:
        signed = ck.read_checkpoint(checkpoint)
        ck.check_signature(signed, key)
        if signed.root is None:
            from tracestore.errors import InputError

            raise InputError(f"{checkpoint} is a {ck.FORMAT} checkpoint: it signs one row, "
                             "not the traces' heads; `tracestore checkpoint` makes a "
                             f"{ck.FORMAT_TREE} one", code="invalid_checkpoint",
                             path=str(checkpoint))
    with open_store(db, create=False, read_only=True) as store:
        legacy = store.legacy_chain_end()
        result, head = verify_trace_rows(store.trace_rows(trace_id), legacy_end=legacy,
                                         as_of=signed.position if signed else NO_POSITION)
    if result.count == 0:
        from tracestore.errors import NotFound

        raise NotFound(f"trace {trace_id!r} has no events in this store", code="trace_not_found",
                       trace_id=trace_id)
    proof: dict[str, Any] | None = None
    if result.ok and signed is not None and checkpoint is not None:
        leaves = ck.read_leaves(ck.leaves_path(checkpoint))
        result, proof = _included(trace_id, head, signed, leaves, result)
    _render(trace_id, result, proof, signed, as_json)


def _included(trace_id: str, head: tuple[int, str] | None, signed: Any, leaves: list[Any],
              result: VerifyResult) -> tuple[VerifyResult, dict[str, Any] | None]:
    """Whether the trace's head as of the signed position is the signed leaf, and the
    leaf is in the signed tree (an RFC 6962 inclusion proof from the leaves file)."""
    import dataclasses

    from tracestore.store.tree_head import included, inclusion

    def broken(reason: str) -> tuple[VerifyResult, None]:
        return dataclasses.replace(result, ok=False, reason=reason,
                                   first_broken_position=signed.position), None

    try:
        index, leaf, steps = inclusion(leaves, trace_id)
    except KeyError:
        if head is None:  # the trace began after the checkpoint: nothing signed to prove
            return result, None
        return broken(f"trace {trace_id!r} had events by position {signed.position} but "
                      "the signed tree has no leaf for it")
    if not included(leaf, index, signed.tree_size, steps, signed.root):
        return broken(f"the leaves file does not prove trace {trace_id!r} is in the signed "
                      "tree (it was edited, or belongs to another checkpoint)")
    if head != (leaf.version, leaf.hash):
        have = "nothing" if head is None else f"version {head[0]}"
        return broken(f"trace {trace_id!r} was signed at version {leaf.version} and now holds "
                      f"{have} by position {signed.position} (truncated or rewritten)")
    return result, {"index": index, "tree_size": signed.tree_size, "root": signed.root,
                    "leaf": {"version": leaf.version, "hash": leaf.hash}, "proof": steps}


def _render(trace_id: str, result: VerifyResult, proof: dict[str, Any] | None, signed: Any,
            as_json: bool) -> None:
    import typer

    if as_json:
        emit_json({"ok": result.ok, "trace_id": trace_id, "count": result.count,
                   "first_broken_position": result.first_broken_position,
                   "reason": result.reason, "head_hash": result.head_hash,
                   "checkpoint_position": signed.position if signed else None,
                   "inclusion": proof})
        if not result.ok:
            raise typer.Exit(ChainBroken.exit_code)
        return
    if not result.ok:
        raise ChainBroken(f"trace {trace_id!r}: chain broken at position "
                          f"{result.first_broken_position}: {result.reason}",
                          position=result.first_broken_position or 0)
    anchored = (f", in the signed tree head at position {signed.position} (leaf "
                f"{proof['index'] + 1} of {proof['tree_size']})" if proof else "")
    console.print(term_text(f"ok trace {trace_id}: {result.count} events (head "
                            f"{result.head_hash[:16]}){anchored}"))
