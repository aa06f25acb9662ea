"""Commands that read the log: events, attempts, verify."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption,
    JsonOption,
    app,
    console,
    emit_json,
    emit_json_line,
    handles_errors,
    open_store,
    term_text,
    trace_of_attempt,
)
from tracestore.cli.completion import complete_trace
from tracestore.errors import ChainBroken, NotFound, ReviewSignatureInvalid

# Heavy modules (SQLAlchemy, the pydantic event models) are imported inside the commands
# that use them, so `tracestore --help` and `--version` start fast.
if TYPE_CHECKING:
    from tracestore.events import StoredEvent
    from tracestore.store.log import EventStore

# The events table stops here (a table of a million rows helps nobody); --json streams all.
TABLE_MAX_ROWS = 1000


def event_summary(stored: StoredEvent, width: int = 70) -> str:
    """One line saying what an event holds, for tables (callers escape it)."""
    event = stored.event
    kind = stored.type
    if kind == "frame.received":
        native = json.dumps(event.native, ensure_ascii=False, separators=(",", ":"))
        kinds = ",".join(event.kinds)
        return f"[{kinds}] {native}"[:width]
    if kind == "transport.drained":
        return f"outcome={event.outcome}" + (f" ({event.detail})" if event.detail else "")
    if kind == "release.decided":
        return f"{event.status} eligible={event.eligible} {','.join(event.reasons)}"
    fields = event.model_dump(exclude={"type", "attempt_id", "trace_id"}, exclude_none=True)
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))[:width]


def stored_to_dict(stored: StoredEvent) -> dict[str, Any]:
    return {
        "position": stored.position, "id": stored.id, "stream": stored.stream,
        "version": stored.version, "type": stored.type,
        "schema_version": stored.schema_version,
        "recorded_at": stored.recorded_at.isoformat(), "trace_id": stored.trace_id,
        "hash": stored.hash, "payload": stored.event.model_dump(mode="json"),
    }


def _check_names(store: EventStore, attempt: str | None, trace: str | None) -> None:
    """A filter naming an attempt or trace that does not exist is an error, as in ``audit``
    (an empty table would read as "that attempt has no events")."""
    if attempt is not None:
        trace_of_attempt(store, attempt)
    if trace is not None and not store.read(trace_id=trace, limit=1):
        raise NotFound(f"no trace {trace!r} in the log", code="trace_not_found",
                       trace_id=trace)


@app.command()
@handles_errors
def events(
    attempt: Annotated[Optional[str], typer.Option(help="Only this attempt's events.")] = None,
    trace: Annotated[Optional[str], typer.Option(help="Only this trace's events.")] = None,
    after: Annotated[int, typer.Option(min=0, help="Only events after this position.")] = 0,
    limit: Annotated[Optional[int], typer.Option(min=1, help="At most this many events.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List events in global order: a table for people, JSON lines with --json.

    JSON lines stream in batches (memory stays bounded on any store); the table shows at
    most 1000 events and says how to page on.
    """
    filters: dict[str, Any] = {"attempt_id": attempt, "trace_id": trace, "after": after}
    with open_store(db, create=False, read_only=True) as store:
        _check_names(store, attempt, trace)
        if as_json:
            for stored in store.iter_events(limit=limit, **filters):
                emit_json_line(stored_to_dict(stored))
            return
        shown = min(limit, TABLE_MAX_ROWS) if limit else TABLE_MAX_ROWS
        rows = store.read(limit=shown + 1, **filters)
    more = len(rows) > shown
    rows = rows[:shown]
    from rich.table import Table

    from tracestore.cli.tables import rest_width, token_column

    table = Table(title=f"{len(rows)} events" + (" (more follow)" if more else ""))
    widths = [max(3, len(str(rows[-1].position)) if rows else 3),
              max([6, *(len(r.stream) for r in rows)]), 3, max([4, *(len(r.type) for r in rows)])]
    table.add_column("pos", justify="right", no_wrap=True)
    token_column(table, "stream", [r.stream for r in rows])
    table.add_column("ver", justify="right", no_wrap=True, min_width=3)
    token_column(table, "type", [r.type for r in rows])
    # One line per event: the summary is cut with … (--json prints it whole).
    table.add_column("what", no_wrap=True, overflow="ellipsis", max_width=rest_width(widths, 5))
    for stored in rows:
        table.add_row(str(stored.position), term_text(stored.stream), str(stored.version),
                      stored.type, term_text(event_summary(stored),
                                             json_quoted=stored.type == "frame.received"))
    console.print(table)
    if more:
        console.print(term_text(f"more events follow: --after {rows[-1].position} shows the "
                                "next ones; --json streams them all", "dim"))


@app.command()
@handles_errors
def attempts(
    status: Annotated[Optional[str], typer.Option(
        metavar="STATUS", help="Only this release status (released, held, stopped, pending, "
                               "…).")] = None,
    reason: Annotated[Optional[str], typer.Option(
        metavar="CODE", help="Only attempts whose decision names this reason code.")] = None,
    api: Annotated[Optional[str], typer.Option(
        "--api", "--provider", metavar="API", help="Only this provider API "
                                                   "(openai-responses, …).")] = None,
    trace: Annotated[Optional[str], typer.Option(
        metavar="TRACE", help="Only this trace.", autocompletion=complete_trace)] = None,
    since: Annotated[Optional[str], typer.Option(
        metavar="WHEN", help="Recorded at or after WHEN: an ISO time or an age (24h, 7d).")]
    = None,
    until: Annotated[Optional[str], typer.Option(
        metavar="WHEN", help="Recorded at or before WHEN (ISO time or age).")] = None,
    has_violations: Annotated[Optional[bool], typer.Option(
        "--has-violations/--no-violations", show_default=False,
        help="Only attempts with (or without) destination-audit violations.")] = None,
    review_state: Annotated[Optional[str], typer.Option(
        metavar="STATE", help="Only this review state: unreviewed, in-review, approved, "
                              "stale, conflict.")] = None,
    violation: Annotated[Optional[str], typer.Option(
        metavar="CODE", help="Only attempts with this audit violation, optionally in one "
                             "destination (ineligible_text_in_destination:history).")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List attempts with trace, API, release status, review state and event counts; the
    options filter (a reviewer's queue)."""
    from tracestore.api import Store
    from tracestore.store.engine import cannot_write, resolve_url

    with open_store(db, create=False, read_only=cannot_write(resolve_url(db))) as store:
        listing = Store(store).attempts(
            status=status, reason=reason, api=api, trace=trace, since=since, until=until,
            has_violations=has_violations, review_state=review_state, violation=violation)
    if as_json:
        emit_json({"attempts": [a.to_dict() for a in listing]})
        return
    from rich.table import Table

    from tracestore.cli.tables import token_column

    shown = listing[:TABLE_MAX_ROWS]
    more = len(listing) - len(shown)
    table = Table(title=f"{len(listing)} attempts" + (f" (first {len(shown)} shown)"
                                                      if more else ""))
    token_column(table, "attempt", [r.attempt_id for r in shown])
    token_column(table, "trace", [r.trace_id or "" for r in shown])
    token_column(table, "api", [r.api or "" for r in shown])
    # Status above review state in one cell: at 80 columns every code stays whole.
    table.add_column("status\nreview", no_wrap=True, min_width=max(
        [len(c) for r in shown for c in (r.status, r.review_state)] + [6]))
    table.add_column("events", justify="right", no_wrap=True)
    table.add_column("first pos", justify="right", no_wrap=True)
    for row in shown:
        table.add_row(term_text(row.attempt_id), term_text(row.trace_id or ""),
                      term_text(row.api or ""),
                      term_text(row.status) + "\n" + term_text(row.review_state),
                      str(row.events), str(row.first_position))
    console.print(table)
    if more:
        console.print(term_text(f"{more} more: --json lists them all", "dim"))


def review_signatures(store: EventStore) -> Any:
    """Check every review signature: ``Store.review_signatures``."""
    from tracestore.api import Store

    return Store(store).review_signatures()


#: What the head hash is, said where it is shown: it covers recording times, so two stores
#: holding the same events show different heads (only an exact export/import keeps it).
HEAD_HASH_NOTE = ("the root hashes the last event of every trace, which chains its trace "
                  "with the times it was recorded: it names what this store holds, and "
                  "another store holding the same events has another one")


def _older_heads_held(store: Any, leaves: list[Any], position: int, result: Any) -> Any:
    """A log of heads' older leaves (heads signed by earlier checkpoints) must still be
    rows of the store with those hashes: a trace rewritten between two checkpoints and
    signed again is broken here."""
    import dataclasses

    from tracestore.store.head_log import history
    from tracestore.store.head_rows import first_unheld

    unheld = first_unheld(store, history(leaves))
    if unheld is None:
        return result
    return dataclasses.replace(
        result, ok=False, first_broken_position=position, code="chain_broken",
        reason=f"trace {unheld.key!r} no longer holds version {unheld.version} as an "
               "earlier checkpoint signed it (rewritten and signed again)")


@app.command()
@handles_errors
def verify(
    checkpoint: Annotated[Optional[Path], typer.Option(
        help="A signed head from `tracestore checkpoint`: also prove the log still extends "
             "it (no tail deleted, nothing rewritten and re-hashed, no fork).")] = None,
    key: Annotated[Optional[Path], typer.Option(
        "--key", help="The checkpoint's public (or private) key file. Default: the PEM text "
                      "in $TRACESTORE_CHECKPOINT_KEY.")] = None,
    trace: Annotated[Optional[str], typer.Option(
        "--trace", help="Check this trace's chain alone (no other trace is read); with "
                        "--checkpoint, also prove its head is in the signed tree (from the "
                        "FILE.leaves beside it).", autocompletion=complete_trace)] = None,
    jobs: Annotated[Optional[int], typer.Option(
        "--jobs", help="Worker processes walking ranges of the log on PostgreSQL (the "
                       "report is the same). Default: one per CPU on a store of 20,000 "
                       "events or more; SQLite always walks in one pass.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Recompute every trace's hash chain and re-hash stored captures; exit non-zero naming
    the first broken position."""
    from tracestore.store.verify_parallel import check_jobs

    check_jobs(jobs, "--jobs")
    if trace is not None:
        from tracestore.cli.verify_trace import verify_one_trace

        verify_one_trace(trace, checkpoint, key, db, as_json)
        return
    expected, signed_leaves = None, None
    if checkpoint is not None:
        from tracestore.store import checkpoint as ck
        from tracestore.store import checkpoint_log
        from tracestore.store.verify import Expected

        signed = ck.read_checkpoint(checkpoint)
        ck.check_signature(signed, key)
        expected = Expected(signed.position, signed.hash, signed.root, signed.tree_size)
        if signed.log:  # a log of heads: its latest leaves are the heads to check
            signed_leaves = checkpoint_log.signed_leaves(checkpoint, signed)
            expected = checkpoint_log.expected(signed, signed_leaves)
    from tracestore.api import Store

    with open_store(db, create=False, read_only=True) as store:
        checked = Store(store).verify(expected, jobs=jobs)
        result, reviews = checked.chain, checked.reviews
        if result.ok and signed_leaves is not None and expected is not None:
            result = _older_heads_held(store, signed_leaves, expected.position, result)
    if as_json:
        emit_json({"ok": result.ok and (reviews is None or reviews.ok), "count": result.count,
                   "first_broken_position": result.first_broken_position,
                   "reason": result.reason, "code": result.code, "head_hash": result.head_hash,
                   "captures_checked": result.captures_checked,
                   "checkpoint_position": result.checkpoint_position,
                   "last_position": result.last_position, "tree_size": result.tree_size,
                   "tree_root": result.tree_root,
                   "reviews_checked": reviews.checked if reviews else 0,
                   "first_bad_review_position": reviews.position if reviews else None,
                   "review_reason": reviews.reason if reviews else None,
                   "review_problem": reviews.kind if reviews and not reviews.ok else None,
                   "missing": list(result.missing)})
        if not result.ok:
            raise typer.Exit(ChainBroken.exit_code)
        if reviews is not None and not reviews.ok:
            raise typer.Exit(ReviewSignatureInvalid.exit_code)
        return
    if result.ok and reviews is not None and not reviews.ok and reviews.kind == "registration":
        assert reviews.position is not None
        raise ReviewSignatureInvalid(
            f"reviewer registration not vouched for at position {reviews.position}: "
            f"{reviews.reason} (the chain holds)", position=reviews.position,
            code="reviewer_registration_invalid")
    if result.ok and reviews is not None and not reviews.ok:
        assert reviews.position is not None
        raise ReviewSignatureInvalid(
            f"review signature bad at position {reviews.position}: {reviews.reason} "
            f"(the chain holds; {reviews.checked} review(s) checked)",
            position=reviews.position)
    if result.ok:
        kind = "tree head" if expected is not None and expected.root is not None else "head"
        anchored = (f", extends the signed {kind} at position {result.checkpoint_position}"
                    if result.checkpoint_position is not None else "")
        note = f"; {reviews.checked} review(s) checked" if reviews and reviews.checked else ""
        traces = f"{result.tree_size} trace{'' if result.tree_size == 1 else 's'}"
        console.print(f"ok {result.count} events in {traces} (root {result.tree_root[:16]})"
                      f"{anchored}{note}")
        console.print(term_text(HEAD_HASH_NOTE, "dim"))
        return
    if result.first_broken_position is None:  # the chain holds; triggers or views are gone
        from tracestore.errors import StoreError

        raise StoreError(f"{result.reason} ({result.count} events verified)",
                         code="schema_incomplete", missing=list(result.missing))
    code = "blob_damaged" if result.code == "blob_damaged" else "chain_broken"
    what = "capture damaged" if code == "blob_damaged" else "chain broken"
    raise ChainBroken(f"{what} at position {result.first_broken_position}: "
                      f"{result.reason} ({result.count} events verified before it)",
                      position=result.first_broken_position, code=code)
