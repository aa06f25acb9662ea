"""``tracestore reviews``: review records by state, with who set what and when."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
)
from tracestore.cli.completion import complete_trace

REVIEW_STATES = ("unreviewed", "in-review", "approved", "stale", "conflict")


def _who(record: dict[str, Any]) -> str:
    values = [f"{v['field']}={v['value'][:40]} by {v['set_by']} at {v['set_at'][:19]} "
              f"(#{v['position']}{'' if v['signed_by_key'] else ', unsigned'})"
              for v in record["values"]]
    approvals = [f"approved by {a['reviewer']} at {a['at'][:19]} (#{a['position']}"
                 + ("" if a["signed_by_key"] else ", unsigned")
                 + (", STALE" if a["stale"] else "")
                 + (", override" if a["override_reason"] else "") + ")"
                 for a in record["approvals"]]
    return "; ".join(values + approvals)


@app.command()
@handles_errors
def reviews(
    state: Annotated[Optional[str], typer.Option(
        metavar="STATE", help="Only records in this state: in-review, approved, stale, "
                              "conflict (a record exists once someone reviewed).")] = None,
    template: Annotated[Optional[str], typer.Option(
        metavar="NAME", help="Only records of this template.")] = None,
    trace: Annotated[Optional[str], typer.Option(
        metavar="TRACE", help="Only this trace.", autocompletion=complete_trace)] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List review records by state: each value with who set it and when, each approval
    (stale or current, signed or not)."""
    from tracestore.cli import queue_index as qi

    qi.check_choice(state, REVIEW_STATES, "--state")
    with open_store(db, create=False) as store:
        qi.sync(store)
        listing = qi.query_reviews(store, state=state, template=template, trace=trace)
    if as_json:
        emit_json({"reviews": listing})
        return
    from rich.table import Table

    from tracestore.cli.tables import token_column

    table = Table(title=f"{len(listing)} review records")
    token_column(table, "attempt", [r["attempt_id"] for r in listing])
    token_column(table, "template", [r["template"] for r in listing])
    token_column(table, "state", [r["state"] for r in listing])
    table.add_column("who set what, when", overflow="fold")
    for r in listing:
        table.add_row(term_text(r["attempt_id"]), term_text(r["template"]),
                      term_text(r["state"]), term_text(_who(r)))
    console.print(table)
