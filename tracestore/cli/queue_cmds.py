"""``tracestore reviews``: review records by state, with who set what and when."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
)
from tracestore.cli.completion import complete_trace

#: A value longer than this is cut in the table, with an ellipsis (--json has it whole).
VALUE_CHARS = 40


def _short(value: str) -> str:
    return value if len(value) <= VALUE_CHARS else value[: VALUE_CHARS - 1] + "…"


def _who(record: dict[str, Any]) -> str:
    values = [f"{v['field']}={_short(v['value'])} by {v['set_by']} at {v['set_at'][:19]} "
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
    from tracestore.review import queue_index as qi

    qi.check_choice(state, qi.REVIEW_STATES, "--state")
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


@app.command("review-batch")
@handles_errors
def review_batch(
    status: Annotated[Optional[str], typer.Option(metavar="STATUS",
                                                  help="As attempts --status.")] = None,
    reason: Annotated[Optional[str], typer.Option(metavar="CODE",
                                                  help="As attempts --reason.")] = None,
    api: Annotated[Optional[str], typer.Option("--api", "--provider", metavar="API",
                                               help="As attempts --api.")] = None,
    trace: Annotated[Optional[str], typer.Option(
        metavar="TRACE", help="As attempts --trace.", autocompletion=complete_trace)] = None,
    since: Annotated[Optional[str], typer.Option(metavar="WHEN",
                                                 help="As attempts --since.")] = None,
    until: Annotated[Optional[str], typer.Option(metavar="WHEN",
                                                 help="As attempts --until.")] = None,
    has_violations: Annotated[Optional[bool], typer.Option(
        "--has-violations/--no-violations", show_default=False,
        help="As attempts --has-violations.")] = None,
    review_state: Annotated[Optional[str], typer.Option(
        metavar="STATE", help="As attempts --review-state.")] = None,
    violation: Annotated[Optional[str], typer.Option(
        metavar="CODE", help="As attempts --violation.")] = None,
    template: Annotated[str, typer.Option(metavar="NAME", help="Template of the records.")]
    = "trace-review",
    set_: Annotated[Optional[list[str]], typer.Option(
        "--set", metavar="FIELD=VALUE", help="Append this value to every matching record "
                                             "(repeatable).")] = None,
    approve: Annotated[bool, typer.Option(help="Approve every matching record.")] = False,
    reviewer: Annotated[Optional[str], typer.Option(help="Who (as review --reviewer).")]
    = None,
    key: Annotated[Optional[Path], typer.Option(
        "--key", help="Your Ed25519 reviewer key (as review --key).")] = None,
    override_reason: Annotated[Optional[str], typer.Option(
        metavar="TEXT", help="As review --override-reason.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="List what would change (and what would be refused); append "
                          "nothing.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Amend or approve every record whose attempt matches the filter: each record gets its
    own events (a refusal for one leaves the others). At least one filter is required."""
    from tracestore.review import queue_index as qi
    from tracestore.cli.review_cmds import registry_in
    from tracestore.errors import InputError, TracestoreError
    from tracestore.review import load_template, parse_assignment, plan_review
    from tracestore.review.signing import signing_key

    filters = qi.QueueFilter(status=status, reason=reason, api=api, trace=trace, since=since,
                             until=until, has_violations=has_violations,
                             review_state=review_state, violation=violation)
    sets = [parse_assignment(s) for s in set_ or []]
    if not filters.given():
        raise InputError("review-batch needs at least one filter (a batch over the whole "
                         "store is never implied)", code="filter_required")
    if not sets and not approve:
        raise InputError("say what to do: --set FIELD=VALUE and/or --approve",
                         code="action_required")
    spec = load_template(template)
    signer = signing_key(key)
    outcomes: list[dict[str, Any]] = []
    with open_store(db, create=False) as store:
        matched = qi.select_attempts(store, filters)

        def builder(row: dict[str, Any]) -> Any:
            def build(view: Any) -> tuple[list[Any], list[bytes]]:
                events = view.read(trace_id=row["trace_id"])
                return plan_review(spec, events, row["attempt_id"], sets=sets,
                                   approve=approve, reviewer=reviewer,
                                   override_reason=override_reason,
                                   registry=registry_in(view), key=signer), []
            return build

        if dry_run:
            for row in matched:
                try:
                    from types import SimpleNamespace

                    view = SimpleNamespace(read=store.read)
                    planned, _ = builder(row)(view)
                    outcomes.append({"attempt_id": row["attempt_id"], "would_append": [
                        {"type": n.event.type, **({"field": n.event.field, "value":
                                                   n.event.value} if n.event.type ==
                                                  "review.field_set" else {})}
                        for n in planned]})
                except TracestoreError as exc:
                    outcomes.append({"attempt_id": row["attempt_id"], "refused": exc.code,
                                     "message": exc.message})
        else:
            results = store.append_each([builder(row) for row in matched])
            for row, result in zip(matched, results):
                if isinstance(result, TracestoreError):
                    outcomes.append({"attempt_id": row["attempt_id"], "refused": result.code,
                                     "message": result.message})
                else:
                    outcomes.append({"attempt_id": row["attempt_id"],
                                     "appended": list(result.positions)})
    refused = [o for o in outcomes if "refused" in o]
    if as_json:
        emit_json({"dry_run": dry_run, "template": spec.name, "matched": len(matched),
                   "records": outcomes})
    else:
        for o in outcomes:
            if "refused" in o:
                line = f"{o['attempt_id']}: refused [{o['refused']}] {o['message']}"
            elif dry_run:
                line = f"{o['attempt_id']}: would append " + ", ".join(
                    w["type"] + (f" {w['field']}={w['value']}" if "field" in w else "")
                    for w in o["would_append"])
            else:
                line = f"{o['attempt_id']}: appended " + ", ".join(
                    f"#{p}" for p in o["appended"])
            console.print(term_text(line))
        console.print(term_text(f"{len(matched)} matched, {len(refused)} refused"
                                + (" (dry run: nothing appended)" if dry_run else "")))
    if refused and len(refused) == len(outcomes):
        raise typer.Exit(5)
