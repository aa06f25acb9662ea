"""``tracestore evidence``: attach an external receipt to an attempt so it can be cited."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
    trace_of_attempt,
)


@app.command()
@handles_errors
def evidence(
    attempt: Annotated[str, typer.Argument(help="The attempt the receipt is about.")],
    kind: Annotated[str, typer.Option(
        help="What it is: cancellation_receipt, provider_receipt, screenshot, readback, "
             "ticket … (templates name the kinds a PASS value needs).")],
    file: Annotated[Path, typer.Option("--file", help="The receipt's bytes (stored "
                                                      "content-addressed).")],
    reviewer: Annotated[Optional[str], typer.Option(help="Who attached it.")] = None,
    note: Annotated[Optional[str], typer.Option(help="A short note shown with it.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append an evidence.attached event (the file stored by its sha256); cite its position
    with review --set FIELD=VALUE --evidence POSITION."""
    from tracestore.cli.store_cmds import read_input
    from tracestore.review.amend import check_reviewer, check_value
    from tracestore.review.receipts import plan_receipt

    data = read_input(file)
    by = check_reviewer(reviewer) if reviewer is not None else None
    if note is not None:
        check_value("note", note)
    with open_store(db, create=False) as store:
        trace_id = trace_of_attempt(store, attempt)

        def build(view: Any) -> tuple[list[Any], list[bytes]]:
            events = view.read(trace_id=trace_id)
            return [plan_receipt(events, attempt, kind=kind, data=data, filename=file.name,
                                 by=by, note=note)], [data]

        result = store.append_with(build)
        if result.skipped_ids:
            found = [e for e in store.read(stream=f"evidence:{attempt}")
                     if e.id in result.skipped_ids]
            position = found[0].position if found else None
        else:
            position = result.positions[0]
    import hashlib

    sha = hashlib.sha256(data).hexdigest()
    if as_json:
        emit_json({"position": position, "attempt_id": attempt, "kind": kind, "sha256": sha,
                   "size": len(data), "already_attached": bool(result.skipped_ids)})
        return
    said = "already attached at" if result.skipped_ids else "attached at"
    console.print(term_text(f"{kind} {sha[:16]}… ({len(data)} bytes) {said} #{position}; "
                            f"cite it with --evidence {position}"))
