"""``tracestore checkpoint``: sign the log's head so that later truncation or rewriting shows.

See ``tracestore/store/checkpoint.py`` for why, and ``verify --checkpoint`` for the check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tracestore.cli.common import (DbOption, JsonOption, app, console, emit_json,
                                   handles_errors, open_store, term_text)

KeyOption = Annotated[Optional[Path], typer.Option(
    "--key", help="Ed25519 key file (PEM). Default: the PEM text in $TRACESTORE_CHECKPOINT_KEY. "
                  "Signing needs the private key; verifying accepts the .pub file.")]


@app.command()
@handles_errors
def checkpoint(
    key: KeyOption = None,
    out: Annotated[Optional[Path], typer.Option(
        help="Write the signed head to FILE (atomically) instead of printing it.")] = None,
    extends: Annotated[Optional[Path], typer.Option(
        "--extends", help="A checkpoint signed earlier with the same key: keep its leaves "
                          "and append each trace's head that moved since, so that the new "
                          "one provably extends it (--consistency). Needs --out.")] = None,
    consistency: Annotated[Optional[tuple[Path, Path]], typer.Option(
        "--consistency", help="OLD NEW: prove checkpoint NEW extends OLD (an RFC 6962 "
                              "consistency proof between their signed roots); reads no "
                              "store.")] = None,
    generate_key: Annotated[Optional[Path], typer.Option(
        "--generate-key", help="Create a new key pair: FILE (private, mode 0600) and "
                               "FILE.pub, then exit.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sign the store's tree head (every trace's chain head); keep the file away from the
    database.

    `tracestore verify --checkpoint FILE` later proves the store still extends that head:
    no trace truncated or dropped, nothing rewritten and re-hashed, no fork. With --out,
    FILE.leaves lists each trace's signed head, so that `verify --trace T --checkpoint
    FILE` can prove one trace alone. With --extends PREV the leaves are PREV's and the
    heads that moved since, and `--consistency PREV FILE` proves FILE extends PREV.
    """
    from tracestore.store import checkpoint as ck

    if generate_key is not None:
        _generate(generate_key, as_json)
        return
    if consistency is not None:
        _consistency(*consistency, key, as_json)
        return
    if extends is not None and out is None:
        from tracestore.errors import InputError

        raise InputError("--extends needs --out FILE: the extended log of heads is written "
                         "beside it (FILE.leaves)", code="invalid_option")
    signed, leaves, added = _sign(db, key, extends)
    if out is None:
        emit_json(signed.to_dict())
        return
    from tracestore.cli.review_cmds import write_atomically
    from tracestore.review.escape import json_text

    write_atomically(ck.leaves_path(out), "".join(
        json_text({"trace_id": leaf.trace_id, "version": leaf.version, "hash": leaf.hash},
                  compact=True) + "\n" for leaf in leaves))
    write_atomically(out, json_text(signed.to_dict()) + "\n")
    if as_json:
        emit_json(signed.to_dict())
        return
    what = (f"{_count(signed.tree_size, 'leaf', 'leaves')}, {added} appended to {extends}'s"
            if extends is not None
            else f"{signed.tree_size} trace{'' if signed.tree_size == 1 else 's'}")
    console.print(term_text(f"signed tree head at position {signed.position} ({what}, "
                            f"root {str(signed.root)[:16]}…) with key {signed.key_id}: {out} "
                            f"(its leaves: {ck.leaves_path(out)})"))


def _generate(path: Path, as_json: bool) -> None:
    from tracestore.store import checkpoint as ck

    public = ck.write_key_pair(path)
    if as_json:  # the keys as `reviewer keygen --json` names them (docs/json.md)
        kid = ck._key_id(ck.load_ed25519_pem(
            ck.read_small(public, "public key", "key_unreadable")))
        emit_json({"private_key": str(path), "public_key": str(public), "key_id": kid})
        return
    console.print(term_text(f"wrote {path} (private, keep it secret) and {public}"))


def _sign(db: str | None, key: Path | None, extends: Path | None,
          ) -> tuple[Any, list[Any], int]:
    """Verify the store (a head that does not verify is never signed), then sign its tree
    head, or the log of heads extending ``extends``: (checkpoint, leaves, leaves added)."""
    from tracestore.store import checkpoint as ck
    from tracestore.store import checkpoint_log, head_log
    from tracestore.store.log import utc_now

    previous = checkpoint_log.signed_log(extends, key) if extends is not None else None
    with open_store(db, create=False, read_only=True) as store:
        result = store.verify()
        if not result.ok:
            from tracestore.errors import ChainBroken

            code = "blob_damaged" if result.code == "blob_damaged" else "chain_broken"
            raise ChainBroken(f"refusing to sign: {code.replace('_', ' ')} at position "
                              f"{result.first_broken_position}: {result.reason}",
                              position=result.first_broken_position or 0, code=code)
        if previous is None:
            leaves = store.tree_leaves(result.last_position)
            return (ck.sign(result.last_position, result.head_hash, utc_now(), key,
                            tree=(result.tree_size, result.tree_root)), leaves, len(leaves))
        leaves, added = checkpoint_log.extend(store, *previous, result.last_position)
    return (ck.sign(result.last_position, result.head_hash, utc_now(), key,
                    tree=(len(leaves), head_log.log_root(leaves)), log=True), leaves, added)


def _consistency(old_path: Path, new_path: Path, key: Path | None, as_json: bool) -> None:
    from tracestore.store import checkpoint_log

    old, _ = checkpoint_log.signed_log(old_path, key)
    new, new_leaves = checkpoint_log.signed_log(new_path, key)
    proof = checkpoint_log.consistency(old, new, new_leaves)
    if as_json:
        emit_json(proof)
        return
    console.print(term_text(f"consistent: {new_path} (position {new.position}, "
                            f"{_count(new.tree_size, 'leaf', 'leaves')}) extends {old_path} "
                            f"(position {old.position}, "
                            f"{_count(old.tree_size, 'leaf', 'leaves')}); RFC 6962 proof of "
                            f"{_count(len(proof['proof']), 'hash', 'hashes')}"))


def _count(n: Any, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
