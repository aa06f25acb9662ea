"""Agent-run commands: ``grade``, and the agent branch of ``ingest``.

Thin: load events, call the pure agent projections (``tracestore.agent``), render.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
)
from tracestore.errors import InputError


def read_cases(path: Path | None) -> dict[str, Any] | None:
    from tracestore.agent.ingest import load_cases
    from tracestore.cli.store_cmds import read_input

    return load_cases(read_input(path)) if path is not None else None


def ingest_agent(data: bytes, *, filename: str, fmt: str, trace: str | None,
                 attempt: str | None, cases: Path | None, db: str | None,
                 as_json: bool) -> None:
    """Record an agent report or run result: every run in ONE transaction, or nothing."""
    from tracestore.agent.ingest import plan_agent_ingest
    from tracestore.events import attempt_stream

    plan = plan_agent_ingest(data, filename=filename, fmt=fmt, trace_prefix=trace,
                             attempt_id=attempt, cases=read_cases(cases))
    first_ids = {e.stream: e.id for e in reversed(plan.events)}  # first event per stream

    def build(view: Any) -> tuple[list[Any], list[bytes]]:
        for attempt_id, _, _ in plan.runs:
            stream = attempt_stream(attempt_id)
            first = view.read(stream=stream, limit=1)
            if first and first[0].id != first_ids[stream]:
                raise InputError(
                    f"attempt {attempt_id!r} already holds events from another input; pass "
                    "--trace PREFIX to record these runs under other ids",
                    code="attempt_exists", attempt_id=attempt_id)
        return plan.events, [plan.blob]

    with open_store(db) as store:
        result = store.append_with(build)
    summary = {"format": plan.format, "sha256": plan.sha256, "runs": len(plan.runs),
               "attempts": [a for a, _, _ in plan.runs], "appended": result.appended,
               "skipped": len(result.skipped_ids),
               "positions": [result.positions[0], result.positions[-1]]
               if result.positions else []}
    if as_json:
        emit_json(summary)
    elif result.appended == 0:
        console.print(term_text(f"already ingested: {len(plan.runs)} runs of {filename} "
                                f"({len(result.skipped_ids)} events present, nothing added)"))
    else:
        console.print(term_text(
            f"ingested {len(plan.runs)} agent runs of {filename} ({plan.format}): "
            f"{result.appended} events at positions {result.positions[0]}–"
            f"{result.positions[-1]}"))
