"""Agent-run commands: ``grade`` (``ingest`` records agent runs through the pipeline).

Thin: load events, call the pure agent projections (``tracestore.agent``), render.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
)
from tracestore.cli.lazy import rich_name

box = rich_name("rich.box")
if TYPE_CHECKING:  # the real classes for the type checker (see cli/common.py's Text)
    from rich.table import Table
    from rich.text import Text
else:
    Table = rich_name("rich.table", "Table")
    Text = rich_name("rich.text", "Text")

if TYPE_CHECKING:
    from tracestore.store.log import EventStore


def _load_runs(store: EventStore, target: str | None) -> list[Any]:
    """The agent runs of one attempt, one trace, or (no target) the whole log, trace by trace."""
    from tracestore.agent.run import agent_runs
    from tracestore.errors import NotFound

    if target is None:
        runs = [r for t in store.trace_ids() for r in agent_runs(store.read(trace_id=t))]
        if not runs:
            raise NotFound("no agent runs in the log; ingest a run file first",
                           code="no_agent_runs")
        return runs
    runs = [r for r in agent_runs(store.read(trace_id=target))]
    if not runs:
        first = store.read(attempt_id=target, limit=1)
        if first:
            runs = [r for r in agent_runs(store.read(trace_id=first[0].trace_id))
                    if r.attempt_id == target]
    if not runs:
        raise NotFound(f"no agent run or trace {target!r} in the log", code="attempt_not_found",
                       target=target)
    return runs


@app.command()
@handles_errors
def grade(
    target: Annotated[Optional[str], typer.Argument(
        help="An agent run (attempt id) or a trace; default: every agent run in the log.")] = None,
    cases: Annotated[Optional[Path], typer.Option(
        help="Cases file (id, sources, answer_patterns, forbidden_patterns) for the case checks.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Seed 001's independent checks per run and the fixed-vs-agent summary, re-derived.

    Status, citations and usage come from tracestore's re-derived admission; the checks
    recorded with a run are compared, never copied.  Without --cases, the checks that need a
    case are named instead of guessed.
    """
    from tracestore.agent.grading import grade as grade_run
    from tracestore.agent.grading import recorded_summary, summary
    from tracestore.cli.store_cmds import read_cases

    case_map = read_cases(cases) or {}
    with open_store(db) as store:
        runs = _load_runs(store, target)
    grades = [grade_run(r, case_map.get(r.opened.case_id or "") if cases else None)
              for r in runs]
    computed, recorded = summary(grades), recorded_summary(grades)
    if as_json:
        emit_json({"runs": [g.to_dict() for g in grades], "summary": computed,
                   "recorded_summary": recorded})
        return
    console.print(_grade_table(grades))
    console.print(_trajectory_table(grades))
    _print_summary(grades, computed, recorded, bool(cases))


def _check_cell(grade: Any) -> Text:
    checks = grade.checks
    if "outcome" not in checks:
        return Text("not computed", style="dim")
    style = {"pass": "green", "fail": "red", "incomplete": "yellow"}[checks["outcome"]]
    return Text(checks["outcome"], style=style)


def _plain_table(title: str) -> Table:
    """No vertical rules, two spaces between columns: seed 001's columns fit 80 columns with
    every code and case id whole (a boxed table needs 86 for the same cells)."""
    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                 collapse_padding=True)


def _run_columns(table: Table) -> None:
    table.add_column("case", no_wrap=True)
    table.add_column("#", no_wrap=True, justify="right")
    table.add_column("path", no_wrap=True)


def _run_cells(g: Any) -> tuple[Text, str, str]:
    return (term_text(g.case_id or g.trial), "—" if g.repeat is None else str(g.repeat),
            g.mode)


def _grade_table(grades: list[Any]) -> Table:
    """Seed 001's table (case / repeat, path, expected sources read, answer fixture, stop
    reason), computed from the re-derivation; model calls are in the trajectory table."""
    runs = f"{len(grades)} agent run{'' if len(grades) == 1 else 's'}"
    table = _plain_table(f"{runs} graded")
    _run_columns(table)
    narrow = console.width < 100  # headers over two or three lines, so codes stay whole
    table.add_column("expected sources read", max_width=9 if narrow else None)
    table.add_column("answer fixture", max_width=12 if narrow else None)
    table.add_column("stop reason", no_wrap=True)
    for g in grades:
        retrieval = g.checks.get("retrieval_targets_read", "?")
        table.add_row(
            *_run_cells(g),
            "No target" if retrieval is None else ("—" if retrieval == "?" else
                                                  str(retrieval).lower()),
            _check_cell(g), term_text(g.reason or g.status))
    return table


def _queries(g: Any) -> Text:
    """Each search query on its line; the fixed path's one search is the question itself."""
    queries = g.checks["trajectory"]["queries"]
    if not queries:
        return Text("—", style="dim")
    return Text("\n").join(Text("(the question)", style="dim") if q == g.question
                           else term_text(f'"{q}"' if isinstance(q, str) else str(q))
                           for q in queries)


def _trajectory_table(grades: list[Any]) -> Table:
    """The trajectory checks (model calls, queries, refined, within limits) and whether the
    checks the run recorded equal the re-derived ones."""
    table = _plain_table("trajectories")
    _run_columns(table)
    narrow = console.width < 100
    table.add_column("model calls", justify="right", max_width=5 if narrow else None)
    table.add_column("queries", ratio=1, overflow="fold")
    table.add_column("refined", no_wrap=True)
    table.add_column("within limits", max_width=6 if narrow else None)
    table.add_column("recorded checks", max_width=8 if narrow else None)
    for g in grades:
        traj = g.checks["trajectory"]
        oracle = "—" if g.recorded is None else "equal" if not g.mismatches else "DIFFER"
        table.add_row(
            *_run_cells(g), str(g.model_calls), _queries(g), "yes" if traj["refined"] else "no",
            "yes" if traj["within_limits"] else Text("NO", style="red"),
            Text(oracle, style="green" if oracle == "equal" else "red" if g.mismatches else ""))
    return table


def _note(text: str, style: str) -> None:
    """A note under the tables, wrapped between words at the terminal's width."""
    console.print(term_text(text, style), soft_wrap=False)


def _print_summary(grades: list[Any], computed: dict[str, Any], recorded: dict[str, Any],
                   had_cases: bool) -> None:
    for mode, counts in computed.items():
        line = f"{mode}: {counts['pass']} pass, {counts['fail']} fail, " \
               f"{counts['incomplete']} incomplete"
        if mode in recorded:
            line += " (recorded: " + ("same" if recorded[mode] == counts else
                                      ", ".join(f"{v} {k}" for k, v in recorded[mode].items())) + ")"
        _note(line, "bold")
    missing = sorted({c for g in grades for c in g.not_computed})
    if missing:
        why = ("no --cases file was given" if not had_cases
               else "the cases file has no case for some runs")
        _note(f"not computed: {', '.join(missing)} ({why}); the trajectory checks need no "
              "case", "yellow")
    for g in grades:
        if g.mismatches:
            _note(f"{g.trial}: recorded checks differ from the re-derived ones in "
                  f"{', '.join(g.mismatches)}", "red")
    disagreeing = [g.trial for g in grades if not g.admission_agrees]
    if disagreeing:
        _note("re-derived admission disagrees with the recorded run for "
              f"{', '.join(disagreeing)} (tracestore audit lists the findings)", "red")
