"""The application's evidence from the command line: ``destination`` and ``task``.

Thin: read the files, append through the store (one transaction each), record the decisions
that became final, print one line.  The library side is ``tracestore.recording``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tracestore.cli.common import Text  # Rich's, loaded on first use
from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, safe_text,
    trace_of_attempt,
)
from tracestore.errors import InputError


#: Joins words the wrapping must keep on one line ("position 38"); printed as a space.
GLUE = "\u00a0"


def _say(line: str, *, indent: str = "", more: str = "    ") -> None:
    """Print ``line`` word-wrapped to the terminal (continuations indented by ``more``):
    ids and codes stay whole, never cut mid-word by the terminal at 80 columns.  Callers
    pass untrusted parts through ``safe_text``; ``GLUE`` marks spaces not to break at."""
    width = max(console.width, 40)
    for piece in textwrap.wrap(line, width=width, initial_indent=indent,
                               subsequent_indent=indent + more, break_long_words=False,
                               break_on_hyphens=False):
        console.print(Text(piece.replace(GLUE, " ")))


def _read_text(path: Path) -> str:
    from tracestore.cli.store_cmds import read_input

    try:
        return read_input(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text (byte {exc.start})",
                         code="invalid_utf8", path=str(path)) from exc


@app.command()
@handles_errors
def destination(
    attempt: Annotated[str, typer.Argument(help="Attempt id.")],
    name: Annotated[str, typer.Argument(metavar="DESTINATION",
                                        help="ui, history, export, copy (or progress).")],
    text_file: Annotated[Path, typer.Option(
        "--text-file", metavar="FILE", help="UTF-8 file holding exactly the text written.")],
    readback: Annotated[bool, typer.Option(
        "--readback", help="The text is what the destination held when read back.")] = False,
    cut_off: Annotated[bool, typer.Option(
        "--cut-off", help="ui only: the partial text of a stopped attempt, shown marked as "
                          "cut off (the release policy allows exactly that).")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record what the application wrote to a destination; audit compares it with the decision."""
    from tracestore.ingest.evidence import destination_event
    from tracestore.events import NewEvent, attempt_stream

    event = destination_event(attempt, name, _read_text(text_file), readback=readback,
                              cut_off=cut_off)
    with open_store(db, create=False) as store:
        trace = trace_of_attempt(store, attempt)
        result = store.append([NewEvent(attempt_stream(attempt), event, trace_id=trace)])
    position = result.positions[0]
    what = "read back from" if readback else "written to"
    if as_json:
        emit_json({"attempt_id": attempt, "destination": name, "readback": readback,
                   "cut_off": cut_off,
                   "sha256": event.sha256, "chars": len(event.text), "position": position})
        return
    _say(f"recorded: {len(event.text)} characters {what} {name} for attempt "
         f"{safe_text(attempt, mark_backslashes=True)} (sha256{GLUE}{event.sha256[:16]}) "
         f"at position{GLUE}{position}")


@app.command()
@handles_errors
def task(
    trace: Annotated[str, typer.Argument(help="Trace id.")],
    task_file: Annotated[Path, typer.Option(
        "--task", metavar="FILE",
        help="JSON task rule {description, answer_patterns, forbidden_patterns}.")],
    by: Annotated[Optional[str], typer.Option(help="Who revised the rule.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append a new version of a trace's task rule; final attempts are judged again under it.

    Decisions recorded under older versions stay in the log as they were.
    """
    from tracestore.cli.store_cmds import read_task
    from tracestore.ingest.decisions import record_decisions
    from tracestore.ingest.evidence import revise_task

    rule = read_task(task_file)
    assert rule is not None
    with open_store(db, create=False) as store:
        version, position = revise_task(store, trace, rule, by=by)
        # Also when the rule was already there: a run killed between the revision and its
        # decisions gets them from the re-run (decisions are idempotent by id).
        decided = record_decisions(store, trace)
        decisions = [e.event for e in store.read(trace_id=trace) if e.position in decided
                     and e.type == "release.decided"]
    rows: list[dict[str, Any]] = [
        {"attempt_id": d.attempt_id, "status": d.status, "reasons": list(d.reasons),
         "decided_at_position": d.decided_at_position, "rule_version": d.rule_version}
        for d in decisions]
    if as_json:
        emit_json({"trace_id": trace, "rule_version": version, "position": position,
                   "decisions": rows})
        return
    if position is None:
        _say(f"trace {safe_text(trace, mark_backslashes=True)}: this rule is already "
             f"version{GLUE}{version}; nothing appended")
        return
    _say(f"trace {safe_text(trace, mark_backslashes=True)}: task rule version{GLUE}{version} "
         f"at position{GLUE}{position}; {len(rows)} decisions recorded under it")
    for row in rows:
        _say(f"{safe_text(row['attempt_id'], mark_backslashes=True)}: {row['status']} "
             f"({', '.join(row['reasons'])})", indent="  ")


@app.command("scenario-schema")
@handles_errors
def scenario_schema() -> None:
    """Print the JSON Schema of scenario files (replay validates every scenario against it)."""
    import json
    import sys

    from tracestore.recording.scenario import SCENARIO_SCHEMA

    sys.stdout.write(json.dumps(SCENARIO_SCHEMA, indent=2) + "\n")


__all__ = ["destination", "scenario_schema", "task"]

