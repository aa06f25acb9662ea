"""Release commands: release, replay, audit.

Thin by design: load events, call the pure projections (the same ones the replay planner
runs while it plans), render.  ``replay`` appends a whole scenario in ONE transaction: the
planner runs inside ``append_with`` so the positions it embeds (``decided_at_position``)
are exactly the ones the store assigns.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
    trace_of_attempt,
)
from tracestore.agent.describe import AGENT_EVENT_TYPES
from tracestore.cli.store_cmds import read_input
from tracestore.errors import InputError, NotFound, StoreError

# The projections, the pydantic event models and SQLAlchemy are imported inside the
# functions that use them, so `tracestore --help` does not pay for them.
if TYPE_CHECKING:
    from tracestore.events import NewEvent, StoredEvent
    from tracestore.projections.destinations import AuditReport
    from tracestore.projections.release import ReleaseDecision
    from tracestore.replay import Scenario
    from tracestore.store.log import EventStore, WriteView

#: Characters of model text shown per timeline cell / table cell (the JSON is never cut).
CELL_CHARS = 60


# -- loading -----------------------------------------------------------------------------

def _merge(*groups: Sequence[StoredEvent]) -> list[StoredEvent]:
    by_position = {e.position: e for group in groups for e in group}
    return [by_position[p] for p in sorted(by_position)]


def load_attempt_context(store: EventStore, attempt_id: str,
                         upto: int | None = None) -> list[StoredEvent]:
    """The attempt's stream plus its trace's events: all a release decision reads."""
    # Every event of an attempt carries its trace id: the trace's events include its own.
    return store.read(trace_id=trace_of_attempt(store, attempt_id, upto=upto), upto=upto)


def _prior_for(view: WriteView, scenario: Scenario) -> list[StoredEvent]:
    """What the planner must see: the trace so far and any stream its attempts would reuse."""
    from tracestore.events import attempt_stream
    from tracestore.replay import OpenStep

    groups = [view.read(trace_id=scenario.trace)]
    groups += [view.read(stream=attempt_stream(s.attempt))
               for s in scenario.steps if isinstance(s, OpenStep)]
    return _merge(*groups)


def read_scenario(path: Path) -> Scenario:
    from tracestore.providers.strictjson import strict_loads
    from tracestore.replay import parse_scenario

    # Strict, like natives: the same depth and number bounds hold for scenarios (a scenario
    # nested 100k deep used to end in RecursionError).
    raw = read_input(path)
    try:
        data = strict_loads(raw)
    except (UnicodeDecodeError, InputError) as exc:
        code = getattr(exc, "code", "invalid_json")
        raise InputError(f"{path} is not JSON: {getattr(exc, 'message', exc)}", code=code,
                         path=str(path)) from None
    return parse_scenario(data)


def append_scenario(store: EventStore, scenario: Scenario) -> list[NewEvent] | None:
    """Plan and append a scenario in one transaction; None when it was replayed before."""
    from tracestore.replay import first_planned_id, plan_replay

    planned: list[NewEvent] = []
    replayed_before = False

    def build(view: WriteView) -> tuple[list[NewEvent], list[bytes]]:
        nonlocal replayed_before
        if view.has_event(first_planned_id(scenario)):
            replayed_before = True
            return [], []
        recorded_at = dt.datetime.fromisoformat(view.recorded_at)
        planned[:] = plan_replay(scenario, prior=_prior_for(view, scenario),
                                 head_position=view.head_position, recorded_at=recorded_at)
        return planned, []

    result = store.append_with(build)
    if replayed_before:
        return None
    if result.skipped_ids:  # the planner refuses known attempts, so this is a real conflict
        raise StoreError(f"{len(result.skipped_ids)} planned events were already stored; "
                         "positions in the plan no longer hold", code="replay_conflict")
    return planned


def scenario_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a directory stands for its ``*.json`` files in name order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.glob("*.json") if p.is_file()))
        else:
            found.append(path)
    if not found:
        raise InputError("no scenario files found in " + ", ".join(map(str, paths)),
                         code="file_not_found")
    return found


# -- commands ----------------------------------------------------------------------------

@app.command()
@handles_errors
def release(
    attempt: Annotated[str, typer.Argument(help="Attempt id.")],
    at: Annotated[Optional[int], typer.Option(
        "--at", min=0, help="Judge as of this global position (later events ignored).")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show an attempt's release decision: status, reasons, position, answer."""
    from tracestore.contracts.envelope import project_envelope
    from tracestore.projections.release import decide_with_view

    with open_store(db, create=False) as store:
        events = load_attempt_context(store, attempt, at)
    decision, view = decide_with_view(events, attempt, upto=at)
    envelope = project_envelope(decision, view)
    if as_json:
        # The envelope is what a front end may show for this attempt (seed 004).
        emit_json({**decision.to_dict(),
                   "envelope": envelope.to_dict() if envelope is not None else None})
        return
    console.print(decision_table([decision], title=f"release decision for {attempt}"
                                 + (f" as of position {at}" if at is not None else "")))
    _print_reasons([decision])
    if decision.answer is not None:
        console.print(Text.assemble(("answer: ", "bold"), term_text(decision.answer)))
    _print_contract(decision)
    if envelope is not None:
        console.print(Text.assemble(("envelope: ", "bold"), f"{envelope.state} / {envelope.code}"
                                    f"{' (retryable)' if envelope.retryable else ''}: ",
                                    term_text(envelope.text, limit=CELL_CHARS)))


def _print_contract(decision: ReleaseDecision) -> None:
    """A structured answer's contract verdict: problems with positions, resolved citations."""
    report = decision.contract
    if report is None:
        return
    verdict = report.verdict
    head = (f"contract {report.contract or '(none bound)'}: binding {report.binding}"
            + (f", {verdict.code}" if verdict is not None else ", reply not parsed"))
    console.print(term_text(head, "bold"))
    for problem in verdict.problems if verdict is not None else ():
        console.print(Text.assemble("  ", term_text(problem.loc), ": ", term_text(problem.msg)))
    for c in verdict.citations if verdict is not None else ():
        console.print(Text.assemble("  cites ", term_text(c.source_id), " → ",
                                    term_text(c.chunk_id or "—"), " ", term_text(c.url or "—")))


@app.command()
@handles_errors
def replay(
    files: Annotated[list[Path], typer.Argument(
        help="Scenario JSON files (trace, task, steps) or directories of them.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append each scenario's steps as events (one transaction each) and print the decisions.

    Every scenario is read and checked before anything is written.  Replaying a scenario
    that is already in the log is a reported no-op.
    """
    from tracestore.projections import decide_all
    from tracestore.replay import replay_report

    scenarios = [(path, read_scenario(path)) for path in scenario_paths(files)]
    reports: list[dict[str, Any]] = []
    decisions: list[ReleaseDecision] = []
    appended = replayed_before = 0
    with open_store(db) as store:
        for path, scenario in scenarios:
            planned = append_scenario(store, scenario)
            events = store.read(trace_id=scenario.trace)
            reports.append(replay_report(events, scenario.trace))
            decisions += decide_all(events, scenario.trace)
            appended += len(planned or [])
            replayed_before += planned is None
            if not as_json and len(scenarios) == 1:
                _print_replay(path, scenario, planned, events)
    if as_json:
        if len(reports) == 1:
            emit_json(reports[0])
        else:
            emit_json({"attempts": [a for r in reports for a in r["attempts"]],
                       "violations": [v for r in reports for v in r["violations"]]})
    elif len(scenarios) > 1:
        title = (f"{len(scenarios)} scenarios: {appended} events appended"
                 + (f", {replayed_before} already replayed" if replayed_before else ""))
        console.print(decision_table(decisions, title=title))
        console.print(term_text("(tracestore release ATTEMPT explains one decision; "
                                "tracestore audit shows the destinations)", "dim"))


def _print_replay(path: Path, scenario: Scenario, planned: list[NewEvent] | None,
                  events: list[StoredEvent]) -> None:
    from tracestore.projections import audit as audit_events
    from tracestore.projections import decide_all

    if planned is None:
        note = f"{path.name}: already replayed (trace {scenario.trace}), nothing appended"
        console.print(term_text(note, "dim"))
    else:
        console.print(timeline(events, scenario.trace))
    title = f"trace {scenario.trace}" + ("" if planned is None
                                         else f": {len(planned)} events appended")
    console.print(decision_table(decide_all(events, scenario.trace), title=title))
    _print_violations(audit_events(events, trace_id=scenario.trace))


@app.command()
@handles_errors
def audit(
    trace: Annotated[Optional[str], typer.Option("--trace", help="Only this trace.")] = None,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Exit 1 when there is any violation (for CI gates).")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Which destination holds which answer (text, sha256) per attempt, and every violation.

    Violations are findings, not errors: the exit code is 0 unless ``--strict`` is given.
    """
    from tracestore.projections import audit as audit_events
    from tracestore.projections import trace_attempts

    with open_store(db, create=False) as store:
        if trace:
            events = store.read(trace_id=trace)
            if not trace_attempts(events, trace):
                raise NotFound(f"no attempts for trace {trace!r} in the log", code="trace_not_found",
                               trace_id=trace)
            report = audit_events(events, trace_id=trace)
        else:
            report = audit_all(store)
    if as_json:
        emit_json(report.to_dict())
    else:
        if trace:
            console.print(timeline(events, trace))
        console.print(destinations_table(report))
        _print_violations(report)
    if strict and report.violations:
        raise typer.Exit(1)


def audit_all(store: EventStore) -> AuditReport:
    """Audit trace by trace, so memory holds one trace's events at a time.

    Every audit rule compares attempts of one trace, so this equals auditing the whole log
    at once; violations are listed in log order.
    """
    from tracestore.projections import audit as audit_events
    from tracestore.projections.destinations import AuditReport

    attempts: list[Any] = []
    violations: list[Any] = []
    for trace_id in store.trace_ids():
        report = audit_events(store.read(trace_id=trace_id), trace_id=trace_id)
        attempts.extend(report.attempts)
        violations.extend(report.violations)
    violations.sort(key=lambda v: v.position)
    return AuditReport(tuple(attempts), tuple(violations))


# -- rendering ---------------------------------------------------------------------------

def decision_table(decisions: Sequence[ReleaseDecision], title: str) -> Table:
    table = Table(title=term_text(title))
    for column in ("attempt", "status", "eligible", "decided at", "reasons", "notes", "answer"):
        table.add_column(column, overflow="fold")
    for d in decisions:
        style = "green" if d.eligible else ("yellow" if d.status == "pending" else "red")
        table.add_row(term_text(d.attempt_id), Text(d.status, style=style),
                      "yes" if d.eligible else "no",
                      "—" if d.decided_at_position is None else str(d.decided_at_position),
                      ", ".join(d.reasons), ", ".join(d.notes),
                      term_text(d.answer, limit=CELL_CHARS) if d.answer is not None else "—")
    return table


def _print_reasons(decisions: Sequence[ReleaseDecision]) -> None:
    from tracestore.projections.reasons import DESCRIPTIONS

    codes = dict.fromkeys(c for d in decisions for c in (*d.reasons, *d.notes))
    for code in codes:
        console.print(Text.assemble((f"  {code}", "bold"), f": {DESCRIPTIONS.get(code, '')}"))


def destinations_table(report: AuditReport) -> Table:
    from tracestore.events import ANSWER_DESTINATIONS

    table = Table(title="destinations")
    table.add_column("attempt")
    table.add_column("status")
    for name in ANSWER_DESTINATIONS:
        table.add_column(name, overflow="fold")
    for a in report.attempts:
        cells = []
        for name in ANSWER_DESTINATIONS:
            entries = a.destinations[name]
            cells.append(Text("\n").join(
                term_text(f"@{e.position} {e.sha256[:12]} {e.text}", limit=CELL_CHARS)
                for e in entries) if entries else Text("—", style="dim"))
        table.add_row(term_text(a.attempt_id), a.decision.status, *cells)
    return table


def _print_violations(report: AuditReport) -> None:
    if not report.violations:
        console.print(Text("no violations", style="green"))
        return
    table = Table(title=f"{len(report.violations)} violations", title_style="bold red")
    for column in ("pos", "code", "attempt", "destination", "what"):
        table.add_column(column, overflow="fold")
    for v in report.violations:
        table.add_row(str(v.position), v.code, term_text(v.attempt_id), v.destination,
                      term_text(v.message))
    console.print(table)


def timeline(events: Sequence[StoredEvent], trace_id: str) -> Table:
    """One row per global position, one column per attempt: interleavings side by side."""
    from tracestore.projections import trace_attempts

    attempts = trace_attempts(events, trace_id)
    table = Table(title=term_text(f"timeline of trace {trace_id}"))
    table.add_column("pos", justify="right")
    table.add_column("trace")
    for attempt_id in attempts:
        table.add_column(term_text(attempt_id), overflow="fold")
    normalizers: dict[str, Any] = {}
    for stored in events:
        owner = stored.attempt_id
        if stored.trace_id != trace_id and owner not in attempts:
            continue
        cells: list[Text | str] = [""] * (1 + len(attempts))
        index = attempts.index(owner) + 1 if owner in attempts else 0
        cells[index] = _cell(stored, normalizers)
        table.add_row(str(stored.position), *cells)
    return table


def _cell(stored: StoredEvent, normalizers: dict[str, Any]) -> Text:
    event = stored.event
    kind = stored.type
    if kind == "frame.received":
        return _frame_cell(event, normalizers)
    if kind == "attempt.started":
        retry = f" (retry of {event.retry_of})" if event.retry_of else ""
        return term_text(f"▶ open {event.reader or ''} {event.api}{retry}", "bold")
    if kind == "local.stopped":
        return Text("■ STOP", style="bold red")
    if kind == "transport.drained":
        return Text(f"⏚ drain {event.outcome}", style="cyan")
    if kind == "release.decided":
        style = "bold green" if event.eligible else "bold red"
        return Text(f"⚖ {event.status} @{event.decided_at_position}", style=style)
    if kind == "trace.opened":
        return term_text(f"● trace opened ({event.profile or 'profile by api'})", "bold")
    if kind == "semantic.judged":
        return Text(f"semantic {event.verdict}", style="magenta")
    if kind in AGENT_EVENT_TYPES:
        from tracestore.agent.describe import describe

        return term_text(describe(event), "magenta", limit=CELL_CHARS)
    if kind == "destination.written":
        return term_text(f"→ {event.destination}: {event.text}", "blue", limit=CELL_CHARS)
    return term_text(kind, "dim")


def _frame_cell(event: Any, normalizers: dict[str, Any]) -> Text:
    from tracestore.providers.base import make_normalizer

    normalizer = normalizers.get(event.attempt_id)
    if normalizer is None:
        try:
            normalizer = normalizers[event.attempt_id] = make_normalizer(event.api)
        except InputError:
            return term_text(",".join(event.kinds) or "frame", "dim")
    parts = []
    for obs in normalizer.feed(event.native, event.event_name):
        if obs.kind in ("text_delta", "final_text"):
            parts.append(f"{obs.kind} {json.dumps(obs.text or '', ensure_ascii=False)}")
        elif obs.kind == "terminal":
            parts.append(f"terminal {obs.stop_reason or obs.status}")
        elif obs.kind == "error":
            parts.append(f"error {obs.native_type}")
        else:
            parts.append(obs.kind)
    return term_text("; ".join(parts), limit=CELL_CHARS, json_quoted=True)
