"""``tracestore report``: one trace as a self-contained HTML page for reviewers.

Thin: load the trace's events, build the report from the projections and review records
(``tracestore.report.model``), render it with the Jinja2 template, write it atomically.
Heavy imports (the store, Jinja2) happen inside the command, so ``--help`` stays light.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, emit_json, err_console, handles_errors, open_store, term_text,
    trace_of_attempt,
)
from tracestore.errors import InputError


@app.command()
@handles_errors
def report(
    trace: Annotated[Optional[str], typer.Argument(
        help="Trace id. May be left out when --attempt is given.", show_default=False)] = None,
    html: Annotated[Optional[Path], typer.Option(
        "--html", metavar="FILE", show_default=False,
        help="Write the HTML page to FILE (written atomically); - prints it.")] = None,
    attempt: Annotated[Optional[list[str]], typer.Option(
        "--attempt", metavar="ATTEMPT", show_default=False,
        help="Show only this attempt's lane and record (repeatable).")] = None,
    template: Annotated[str, typer.Option(
        "--template", metavar="NAME",
        help="Review template filled for each attempt (see tracestore templates).")]
    = "trace-review",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write a trace's report: lanes per attempt, decisions, destination audit, records.

    The page is one file with no scripts and no network requests, safe to attach to a
    review.
    """
    import tracestore
    from tracestore.report.html import render_html
    from tracestore.report.model import build_report
    from tracestore.review import load_template

    if html is None:
        raise InputError("name the output file: --html FILE (or --html - to print the page)",
                         code="missing_option")
    spec = load_template(template)
    with open_store(db, create=False, read_only=True) as store:
        trace_id = _resolve_trace(store, trace, attempt or [])
        events = store.read(trace_id=trace_id)
    result = build_report(events, trace_id, attempts=attempt, template=spec,
                          version=tracestore.__version__)
    page = render_html(result, version=tracestore.__version__)
    if str(html) == "-":
        sys.stdout.write(page)
        return
    from tracestore.cli.files import write_atomically

    write_atomically(html, page)
    summary = {"trace_id": trace_id, "html": str(html), "attempt_count": len(result.lanes),
               "events": sum(row.count for row in result.rows),
               "violation_count": len(result.violations)}
    if as_json:
        # "attempts" and "violations" are lists in every other command (docs/json.md): the
        # counts are *_count now; the old integer keys stay for one release.
        emit_json({**summary, "attempts": summary["attempt_count"],
                   "violations": summary["violation_count"]})
    else:
        err_console.print(term_text(
            f"wrote {html}: trace {trace_id}, {summary['attempt_count']} attempts, "
            f"{summary['events']} events, {summary['violation_count']} violations"))


def _resolve_trace(store: object, trace: Optional[str], attempts: list[str]) -> str:
    """The trace to show: as named, or the one the ``--attempt`` values belong to."""
    if trace is not None:
        return trace
    if not attempts:
        raise InputError("name a TRACE or an --attempt", code="trace_required")
    return trace_of_attempt(store, attempts[0])  # type: ignore[arg-type]
