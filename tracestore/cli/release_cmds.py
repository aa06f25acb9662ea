"""Release commands: release, replay, audit.

Thin by design: load events, call the pure projections (the same ones the replay planner
runs while it plans), render.  ``replay`` reads the scenario files and hands them to the ingest
pipeline (``tracestore.ingest.pipeline.append_scenarios``), which plans each inside its ONE
transaction so the positions it embeds are exactly the ones the store assigns.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from tracestore.cli.common import Text  # Rich's, loaded on first use
from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, err_console, handles_errors, open_store,
    term_text, trace_of_attempt,
)
from tracestore.cli.store_cmds import read_input
from tracestore.cli.tables import (  # noqa: F401 - rendering lives there; names kept here
    CELL_CHARS, decision_table, destinations_table, print_reasons, print_violations, timeline,
)
from tracestore.errors import InputError, NotFound, TracestoreError

# The projections, the pydantic event models and SQLAlchemy are imported inside the
# functions that use them, so `tracestore --help` does not pay for them.
if TYPE_CHECKING:
    from tracestore.events import NewEvent, StoredEvent
    from tracestore.projections.destinations import AuditReport
    from tracestore.projections.release import ReleaseDecision
    from tracestore.ingest.replay import Scenario
    from tracestore.store.log import EventStore



# -- loading -----------------------------------------------------------------------------

def load_attempt_context(store: EventStore, attempt_id: str,
                         upto: int | None = None) -> list[StoredEvent]:
    """The attempt's stream plus its trace's events: all a release decision reads."""
    # Every event of an attempt carries its trace id: the trace's events include its own.
    return store.read(trace_id=trace_of_attempt(store, attempt_id, upto=upto), upto=upto)


def read_scenario(path: Path) -> Scenario:
    from tracestore.providers.strictjson import strict_loads
    from tracestore.ingest.replay import parse_scenario

    # Strict, like natives: the same depth and number bounds hold for scenarios (a scenario
    # nested 100k deep used to end in RecursionError).
    raw = read_input(path)
    try:
        data = strict_loads(raw)
    except (UnicodeDecodeError, InputError) as exc:
        code = getattr(exc, "code", "invalid_json")
        raise InputError(f"{path} is not JSON: {getattr(exc, 'message', exc)}", code=code,
                         path=str(path)) from None
    from tracestore.recording.scenario import expand_capture_steps, validate_scenario_json

    # The published schema first (one sentence naming the step), then capture steps become
    # the event steps they stand for (paths: the scenario's folder, else the working one).
    try:
        validate_scenario_json(data)
    except InputError as exc:
        raise InputError(f"{path}: {exc.message}", code=exc.code,
                         **{**exc.context, "file": str(path)}) from None
    origin: list[int] = []
    expanded = expand_capture_steps(data, lambda name: _capture_bytes(path, name), origin)
    try:
        return parse_scenario(expanded)
    except InputError as exc:
        step = exc.context.get("step")
        if not isinstance(step, int) or not 0 <= step < len(origin) or origin[step] == step:
            raise
        # A capture step became several event steps: name the step as the author wrote it.
        message = exc.message.replace(f"step {step}:", f"step {origin[step]}:", 1)
        raise InputError(message, code=exc.code,
                         **{**exc.context, "step": origin[step]}) from None


def _capture_bytes(scenario: Path, name: str) -> bytes:
    from tracestore.recording.scenario import capture_path

    return read_input(capture_path(scenario, name))  # never outside its folder


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
    from tracestore.api import Store

    with open_store(db, create=False, read_only=True) as store:
        judged = Store(store).release(attempt, at=at)
    decision, envelope = judged.decision, judged.envelope
    # A recorded decision the running policy recomputes differently is shown, never replaced.
    disagreements = judged.disagreements
    if as_json:
        # The envelope is what a front end may show for this attempt (seed 004).
        emit_json(judged.to_dict())
        return
    for d in disagreements:
        r = d.recorded
        console.print(term_text(
            f"recorded decision at #{d.position} (policy {r.policy_version}, rule version "
            f"{r.rule_version or 'none'}) says {r.status} ({', '.join(r.reasons)}); recomputed "
            f"now: {decision.status}. The recorded event stays as it is.", "bold yellow"))
    console.print(decision_table([decision], title=f"release decision for {attempt}"
                                 + (f" as of position {at}" if at is not None else "")))
    print_reasons([decision])
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
    if report.terminal_reason is not None:  # the application's own words, escaped
        console.print(Text.assemble(f"  {report.local_terminal} frame reason: ",
                                    term_text(report.terminal_reason)))
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
    from tracestore.ingest.pipeline import append_scenarios
    from tracestore.ingest.replay import replay_report
    from tracestore.projections import decide_all

    scenarios = [(path, read_scenario(path)) for path in scenario_paths(files)]
    reports: list[dict[str, Any]] = []
    decisions: list[ReleaseDecision] = []
    failed: list[tuple[Path, TracestoreError]] = []
    counted: list[tuple[str, int, int | None]] = []
    appended = replayed_before = 0
    with open_store(db) as store:
        outcomes = append_scenarios(store, [scenario for _, scenario in scenarios])
        for (path, scenario), planned in zip(scenarios, outcomes):
            if isinstance(planned, TracestoreError):
                if len(scenarios) == 1:
                    raise planned
                failed.append((path, planned))
                continue
            events = store.read(trace_id=scenario.trace)
            reports.append(replay_report(events, scenario.trace))
            counted.append(_violation_count(scenario, reports[-1]))
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
                       "violations": [v for r in reports for v in r["violations"]],
                       **({"failed": [{"file": str(p), "error": e.code, "message": e.message}
                                      for p, e in failed]} if failed else {})})
    elif len(scenarios) > 1:
        title = (f"{len(scenarios)} scenarios: {appended} events appended"
                 + (f", {replayed_before} already replayed" if replayed_before else "")
                 + (f", {len(failed)} failed (nothing of them written)" if failed else ""))
        console.print(decision_table(decisions, title=title))
        console.print(term_text("(tracestore release ATTEMPT explains one decision; "
                                "tracestore audit shows the destinations)", "dim"),
                      soft_wrap=False)
        print_expected_violations(counted)
    for path, error in failed:
        err_console.print(term_text(f"{path}: error[{error.code}]: {error.message}", "red"))
    if failed:
        raise typer.Exit(failed[0][1].exit_code)


def _violation_count(scenario: Scenario, report: dict[str, Any]) -> tuple[str, int, int | None]:
    """(trace, violations found, violations the scenario states it expects or None)."""
    stated = (scenario.expected or {}).get("violations")
    return (scenario.trace, len(report["violations"]),
            len(stated) if isinstance(stated, list) else None)


def print_expected_violations(counted: Sequence[tuple[str, int, int | None]]) -> None:
    """The last lines of a folder replay: the violations found against those the scenarios
    state, so that a seeded buggy application's findings read as the point, not a failure."""
    found = sum(n for _, n, _ in counted)
    seeded = [(t, n) for t, n, want in counted if want and n == want]
    surprises = [(t, n, want) for t, n, want in counted if want is not None and n != want]
    unstated = [(t, n) for t, n, want in counted if want is None and n]
    if not found and not surprises:
        console.print(Text("no violations", style="green"))
        return
    if seeded:
        names = ", ".join(f"{t} ({n})" for t, n in seeded)
        total = sum(n for _, n in seeded)
        console.print(Text.assemble(
            (f"{total} violation{'s' * (total != 1)} expected", "bold"),
            f" from the seeded buggy applications {names}: ",
            "each writes to a destination what it must not, and catching that is their point."),
            soft_wrap=False)
    for trace, n, want in surprises:
        console.print(Text(f"{trace}: {n} violation{'s' * (n != 1)}, its scenario expects "
                           f"{want}", style="bold red"))
    for trace, n in unstated:
        console.print(Text(f"{trace}: {n} violation{'s' * (n != 1)}", style="red"))
    console.print(term_text("(tracestore audit lists every violation with its position)",
                            "dim"))


def _print_replay(path: Path, scenario: Scenario, planned: list[NewEvent] | None,
                  events: list[StoredEvent]) -> None:
    from tracestore.projections import audit as audit_events
    from tracestore.projections import decide_all

    report = audit_events(events, trace_id=scenario.trace)
    if planned is None:
        note = f"{path.name}: already replayed (trace {scenario.trace}), nothing appended"
        console.print(term_text(note, "dim"))
    else:
        console.print(timeline(events, scenario.trace, report.violations))
    title = f"trace {scenario.trace}" + ("" if planned is None
                                         else f": {len(planned)} events appended")
    console.print(decision_table(decide_all(events, scenario.trace), title=title))
    print_violations(report)


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

    with open_store(db, create=False, read_only=True) as store:
        if trace:
            events = store.read(trace_id=trace)
            if not trace_attempts(events, trace):
                raise NotFound(f"no attempts for trace {trace!r} in the log", code="trace_not_found",
                               trace_id=trace)
            report = audit_events(events, trace_id=trace)
        elif as_json:  # streamed: memory holds one trace, whatever the store's size
            violations = write_audit_json(store, sys.stdout.write)
            if strict and violations:
                raise typer.Exit(1)
            return
        else:
            report = audit_all(store)
    if as_json:
        emit_json(report.to_dict())
    else:
        if trace:
            console.print(timeline(events, trace, report.violations))
        console.print(destinations_table(report))
        print_violations(report)
    if strict and report.violations:
        raise typer.Exit(1)


def write_audit_json(store: EventStore, write: Callable[[str], Any]) -> int:
    """``audit --json`` of the whole log, written as each trace is audited.

    The text is exactly ``emit_json(audit_all(store).to_dict())``: attempts in trace
    order as they are produced, then the violations sorted by position (kept until the
    end; a clean store has none).  Returns the number of violations.
    """
    from tracestore.review.audit_index import write_indexed_audit

    indexed = write_indexed_audit(store, write)  # judged once, kept by appends
    if indexed is not None:
        return indexed
    return write_audit_json_live(store, write)


def write_audit_json_live(store: EventStore, write: Callable[[str], Any]) -> int:
    """``write_audit_json`` judging every trace now (no audit index of this code)."""
    from tracestore.projections import audit as audit_events
    from tracestore.review.escape import json_text

    violations: list[Any] = []
    write('{"attempts": [')
    separator = ""
    for trace_id, events in store.iter_traces():
        report = audit_events(events, trace_id=trace_id)
        for attempt in report.attempts:
            write(separator + json_text(attempt.to_dict(), indent=None, default=str))
            separator = ", "
        violations.extend(report.violations)
    violations.sort(key=lambda v: v.position)
    write('], "violations": ['
          + ", ".join(json_text(v.to_dict(), indent=None, default=str) for v in violations)
          + "]}\n")
    return len(violations)


def audit_all(store: EventStore) -> AuditReport:
    """Audit trace by trace, so memory holds one trace's events at a time
    (``Store.audit``): violations are listed in log order."""
    from tracestore.api import Store

    return Store(store).audit()
