"""``ingest-batch``: build a large store from many captures in one process.

``tracestore ingest FILE`` once per file spends nearly all its time starting Python and
opening the store (about 2.7 files a second).  Here the store is opened once and every
file goes through the same pipeline as ``ingest`` (``tracestore.ingest.pipeline``) -- ONE
transaction per file, deterministic ids, agent-run files recorded as runs -- so each file
is still all or nothing, and a file ingested before is a reported no-op.  A bad file is
reported with its error code and the batch goes on with the next; the exit code is then 2.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
)
from tracestore.errors import InputError, TracestoreError

if TYPE_CHECKING:
    from tracestore.store.log import EventStore


def batch_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a directory stands for the regular, non-hidden files directly in it,
    in name order (sub-directories are not entered)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir()
                                if p.is_file() and not p.name.startswith(".")))
        elif path.exists():
            found.append(path)
        else:
            raise InputError(f"{path} does not exist", code="file_not_found", path=str(path))
    if not found:
        raise InputError("no files found in " + ", ".join(map(str, paths)),
                         code="file_not_found")
    return found


def ingest_one(store: EventStore, path: Path) -> dict[str, Any]:
    """Record one file through the ingest pipeline, exactly as ``tracestore ingest FILE``
    does (one transaction for its events and its decisions; an agent-run file too)."""
    from tracestore.agent.codes import AGENT_API
    from tracestore.cli.store_cmds import read_input
    from tracestore.ingest.pipeline import IngestOptions, PlanIngested, ingest_input

    done = ingest_input(store, read_input(path), IngestOptions(filename=path.name))
    w = done.written
    if isinstance(done, PlanIngested):
        return {"file": str(path), "attempt_id": done.attempt_id, "api": done.api,
                "kind": done.kind, "frames": done.frames, "appended": w.appended,
                "skipped": w.skipped, "decisions_recorded": list(w.decisions_recorded)}
    # attempt_ids / run_count as `ingest` names them (docs/json.md); "attempts" (ids) and
    # "runs" (a count) stay one release.
    return {"file": str(path), "attempt_ids": list(done.attempts), "api": AGENT_API,
            "kind": done.format, "run_count": len(done.attempts), "appended": w.appended,
            "skipped": w.skipped, "decisions_recorded": list(w.decisions_recorded),
            "attempts": list(done.attempts), "runs": len(done.attempts)}


@app.command("ingest-batch")
@handles_errors
def ingest_batch(
    paths: Annotated[list[Path], typer.Argument(
        help="Captures or projections, or directories of them (their files, by name).")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Ingest many files in one process: one transaction per file, same ids as ingest."""
    from tracestore.store.bulk import paused_gc

    files = batch_paths(paths)
    reports: list[dict[str, Any]] = []
    with open_store(db) as store, paused_gc():
        for path in files:
            try:
                reports.append(ingest_one(store, path))
            except TracestoreError as exc:
                reports.append({"file": str(path), "error": exc.code, "message": exc.message})
            except OSError as exc:
                reports.append({"file": str(path), "error": "file_error",
                                "message": exc.strerror or str(exc)})
    failed = [r for r in reports if "error" in r]
    if as_json:
        emit_json({"files": reports, "ingested": len(reports) - len(failed),
                   "failed": len(failed)})
    else:
        for r in reports:
            if "error" in r:
                console.print(term_text(f"{r['file']}: error[{r['error']}]: {r['message']}",
                                        "red"))
        appended = sum(r.get("appended", 0) for r in reports)
        console.print(term_text(f"{len(reports) - len(failed)} of {len(reports)} files "
                                f"ingested: {appended} events appended"))
    if failed:
        raise typer.Exit(2)
