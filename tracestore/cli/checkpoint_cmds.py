"""``tracestore checkpoint``: sign the log's head so that later truncation or rewriting shows.

See ``tracestore/store/checkpoint.py`` for why, and ``verify --checkpoint`` for the check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

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
    FILE` can prove one trace alone.
    """
    from tracestore.cli.review_cmds import write_atomically
    from tracestore.store import checkpoint as ck
    from tracestore.store.log import utc_now

    if generate_key is not None:
        public = ck.write_key_pair(generate_key)
        if as_json:  # the keys as `reviewer keygen --json` names them (docs/json.md)
            kid = ck._key_id(ck.load_ed25519_pem(
                ck.read_small(public, "public key", "key_unreadable")))
            emit_json({"private_key": str(generate_key), "public_key": str(public),
                       "key_id": kid})
            return
        console.print(term_text(f"wrote {generate_key} (private, keep it secret) and {public}"))
        return
    with open_store(db, create=False, read_only=True) as store:
        result = store.verify()  # never sign a head that does not verify
        if not result.ok:
            from tracestore.errors import ChainBroken

            code = "blob_damaged" if result.code == "blob_damaged" else "chain_broken"
            raise ChainBroken(f"refusing to sign: {code.replace('_', ' ')} at position "
                              f"{result.first_broken_position}: {result.reason}",
                              position=result.first_broken_position or 0, code=code)
    signed = ck.sign(result.last_position, result.head_hash, utc_now(), key,
                     tree=(result.tree_size, result.tree_root))
    if out is None:
        emit_json(signed.to_dict())
        return
    from tracestore.review.escape import json_text

    with open_store(db, create=False, read_only=True) as store:
        leaves = store.tree_leaves(signed.position)
    write_atomically(ck.leaves_path(out), "".join(
        json_text({"trace_id": leaf.trace_id, "version": leaf.version, "hash": leaf.hash},
                  compact=True) + "\n" for leaf in leaves))
    write_atomically(out, json_text(signed.to_dict()) + "\n")
    if as_json:
        emit_json(signed.to_dict())
    else:
        console.print(term_text(f"signed tree head at position {signed.position} "
                                f"({signed.tree_size} trace{'' if signed.tree_size == 1 else 's'}, "
                                f"root {str(signed.root)[:16]}…) "
                                f"with key {signed.key_id}: {out} (its leaves: "
                                f"{ck.leaves_path(out)})"))
