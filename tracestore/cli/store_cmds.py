"""Store commands: init, ingest, events, attempts, verify."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Optional

import typer

from tracestore.cli.common import (
    DbOption,
    err_console,
    safe_text,
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
from tracestore.errors import ChainBroken, InputError, NotFound

# Heavy modules (SQLAlchemy, the pydantic event models, the decoders) are imported inside
# the commands that use them, so `tracestore --help` and `--version` start fast.
if TYPE_CHECKING:
    from tracestore.events import StoredEvent, TaskRule
    from tracestore.ingest import IngestPlan
    from tracestore.store.log import AppendResult, EventStore, WriteView

# The events table stops here (a table of a million rows helps nobody); --json streams all.
TABLE_MAX_ROWS = 1000

# Captures are read whole (they are bodies of one response); anything larger than this is
# refused up front instead of exhausting memory.
MAX_INPUT_BYTES = 256 * 1024 * 1024


@app.command()
@handles_errors
def init(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Create the database (or upgrade it) to the newest schema."""
    from tracestore.store.migrate import SCHEMA_HEAD

    with open_store(db) as store:
        info = {"db": store.url, "revision": SCHEMA_HEAD, "events": store.head_position()}
    if as_json:
        emit_json(info)
    else:
        console.print(f"ready: {info['db']} (schema {info['revision']}, "
                      f"{info['events']} events)")


STDIN = Path("-")
_READ_PIECE = 1024 * 1024


def read_input(path: Path) -> bytes:
    """The whole input, refused with ``input_too_large`` once it passes ``MAX_INPUT_BYTES``.

    The bound is counted while reading, not taken from ``stat``: pipes, FIFOs, devices
    (``/dev/zero``) and standard input (``-``) report size 0 and would otherwise be read
    without end.
    """
    limit = MAX_INPUT_BYTES
    if path == STDIN:
        return _read_bounded(sys.stdin.buffer, limit, "standard input", "-")
    if not path.exists():
        raise InputError(f"{path} does not exist", code="file_not_found", path=str(path))
    if path.is_dir():
        raise InputError(f"{path} is a directory, not a file", code="not_a_file", path=str(path))
    size = path.stat().st_size
    if size > limit:
        raise InputError(f"{path} is {size} bytes; the limit is {limit}",
                         code="input_too_large", path=str(path), limit=limit)
    with path.open("rb") as source:
        return _read_bounded(source, limit, str(path), str(path))


def _read_bounded(source: BinaryIO, limit: int, name: str, path: str) -> bytes:
    data = bytearray()
    while True:
        piece = source.read(min(_READ_PIECE, limit + 1 - len(data)))
        if not piece:
            return bytes(data)
        data += piece
        if len(data) > limit:
            raise InputError(f"{name} is larger than the limit of {limit} bytes",
                             code="input_too_large", path=path, limit=limit)


def read_task(path: Path | None) -> TaskRule | None:
    if path is None:
        return None
    from tracestore.events import TaskRule
    from tracestore.projections.semantics import validate_rule

    try:
        rule = TaskRule.model_validate_json(read_input(path))
    except ValueError as exc:
        raise InputError(f"{path} is not a task rule: {str(exc).splitlines()[0]}",
                         code="invalid_task") from exc
    validate_rule(rule)  # a bad or unsafe pattern fails now, before anything is written
    return rule


def append_plan(store: EventStore, plan: IngestPlan) -> AppendResult:
    """Append an ingest plan in one transaction, refusing to mix inputs in one attempt."""
    from tracestore.events import attempt_stream, trace_stream

    def build(view: WriteView) -> tuple[list[Any], list[bytes]]:
        opened = view.read(stream=trace_stream(plan.trace_id), limit=1)
        new_task = plan.events[0].event.task
        if opened and new_task is not None and opened[0].event.task != new_task:
            raise InputError(
                f"trace {plan.trace_id!r} already exists with another task rule; a trace has "
                "one task, so choose another --trace or leave out --task",
                code="trace_conflict", trace_id=plan.trace_id)
        new_origin = plan.events[0].event.origin
        if opened and new_origin is not None and opened[0].event.origin != new_origin:
            raise InputError(
                f"trace {plan.trace_id!r} already exists with origin "
                f"{opened[0].event.origin or 'not stated'!r}; a trace has one origin, so "
                "choose another --trace", code="trace_conflict", trace_id=plan.trace_id)
        _check_bindings(view, plan)
        stream = attempt_stream(plan.attempt_id)
        first = view.read(stream=stream, limit=1)
        # The plan's first attempt event follows trace.opened and any bindings.
        if first and first[0].id != next(e.id for e in plan.events if e.stream == stream):
            raise InputError(
                f"attempt {plan.attempt_id!r} already holds events from another input; a "
                "retry is a fresh attempt, so choose another --attempt",
                code="attempt_exists", attempt_id=plan.attempt_id)
        return plan.events, [plan.blob]

    return store.append_with(build)


def _check_bindings(view: WriteView, plan: IngestPlan) -> None:
    """A trace answers one request under one contract: a different one is refused."""
    from itertools import takewhile

    from tracestore.events import trace_stream
    from tracestore.ingest import check_binding_conflicts

    # Bindings are among the plan's leading trace-stream events; looking no further keeps a
    # lazily planned body of a million frames from being generated (and parsed) twice.
    stream = trace_stream(plan.trace_id)
    lead = list(takewhile(lambda e: e.stream == stream, plan.events))
    if any(e.event.type in ("contract.bound", "request.bound") for e in lead):
        check_binding_conflicts(view.read(stream=stream), lead, plan.trace_id)


@app.command()
@handles_errors
def ingest(
    file: Annotated[Path, typer.Argument(help="A capture (SSE, NDJSON, JSON array, AWS event "
                                         "stream) or a JSON array of decoded events; - reads "
                                         "standard input.")],
    attempt: Annotated[Optional[str], typer.Option(help="Attempt id (default: file name + hash).")] = None,
    trace: Annotated[Optional[str], typer.Option(help="Trace id (default: the attempt id).")] = None,
    provider: Annotated[str, typer.Option(
        "--provider", "--api",
        help="auto, openai-responses, openai-chat, anthropic-messages, "
             "bedrock-converse-stream, gemini, xai, ollama, app-frames.")] = "auto",
    chunk_size: Annotated[Optional[int], typer.Option(
        min=1, help="Feed the decoder in chunks of this many bytes (boundaries change nothing).")] = None,
    task: Annotated[Optional[Path], typer.Option(
        help="JSON file with the trace's semantic rule {answer_patterns, forbidden_patterns}.")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="auto, capture, agent-report (seed 001 comparison) or agent-result "
                         "(one run result).")] = "auto",
    cases: Annotated[Optional[Path], typer.Option(
        help="Agent runs: cases file whose patterns become each trace's semantic rule.")] = None,
    contract: Annotated[Optional[Path], typer.Option(
        help="Output contract JSON file: the answer is a structured reply judged by it.")] = None,
    binding: Annotated[Optional[Path], typer.Option(
        help="Request binding JSON file (messages, request hash, schema, corpus identity, "
             "selected_context): frames and citations are checked against it.")] = None,
    origin: Annotated[Optional[str], typer.Option(
        help="Where the input came from: synthetic (hand-built), decoded (a real capture "
             "decoded into a JSON array) or capture (raw framed bytes, the default for "
             "them). A JSON array without it says its origin was not stated.")] = None,
    retry_of: Annotated[Optional[str], typer.Option(
        "--retry-of", metavar="ATTEMPT", help="The attempt this one retries (same trace): the app's retry.")] = None,
    stop_after_byte: Annotated[Optional[int], typer.Option(
        "--stop-after-byte", min=0, metavar="N",
        help="The user pressed Stop after the app had received N bytes: a local Stop is "
             "placed after the frames that end within them.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record one attempt from a file: every native frame becomes one event, in one transaction.

    An agent run file (seed 001's comparison report, or one run result) records each run as
    its own trace and attempt instead.
    """
    from tracestore.bulk import paused_gc
    from tracestore.cli.contract_cmds import read_binding, read_contract
    from tracestore.ingest import Bindings, plan_ingest

    data = read_input(file)
    name = "stdin" if file == STDIN else file.name  # messages, progress, default ids
    if fmt != "capture":
        from tracestore.agent.ingest import FORMATS, sniff

        if fmt != "auto" and fmt not in FORMATS:
            raise InputError(f"--format {fmt!r} is not one of auto, capture, "
                             f"{', '.join(FORMATS)}", code="unknown_format")
        if fmt in FORMATS or sniff(data):
            from tracestore.cli.agent_cmds import ingest_agent

            ingest_agent(data, filename=name, fmt=fmt, trace=trace, attempt=attempt,
                         cases=cases, db=db, as_json=as_json)
            return
    rule = read_task(task)
    # Contract and binding are checked before anything is decoded or written.
    bindings = Bindings(read_contract(contract) if contract else None, read_binding(binding))
    with decode_progress(name, len(data), quiet=as_json) as progress, paused_gc():
        plan = plan_ingest(data, filename=name, attempt_id=attempt, trace_id=trace,
                           provider=provider, chunk_size=chunk_size, task=rule,
                           progress=progress, bindings=bindings, origin=origin)
    from tracestore.recording.decisions import record_decisions
    from tracestore.recording.evidence import check_retry_of, with_app_evidence

    plan = with_app_evidence(plan, retry_of=retry_of, stop_after_byte=stop_after_byte)
    with open_store(db) as store:
        check_retry_of(store, plan.trace_id, retry_of)
        result = append_plan(store, plan)
        # A final decision is appended as an event too (its own short transaction).
        decided = record_decisions(store, plan.trace_id) if result.appended else []
    warnings = provider_warnings(plan, provider)
    for warning in warnings:
        err_console.print(term_text(f"warning: {warning}", "yellow"))
    summary = {
        "attempt_id": plan.attempt_id, "trace_id": plan.trace_id, "api": plan.api,
        "kind": plan.kind, "framing": plan.framing, "sha256": plan.sha256,
        "frames": plan.frames, "drain": plan.drain, "appended": result.appended,
        "skipped": len(result.skipped_ids),
        "positions": [result.positions[0], result.positions[-1]] if result.positions else [],
        "decisions_recorded": decided,
    }
    if warnings:
        summary["warnings"] = warnings
    if as_json:
        emit_json(summary)
        return
    if result.appended == 0:
        console.print(term_text(f"already ingested: attempt {plan.attempt_id} "
                                f"({len(result.skipped_ids)} events present, nothing added)"))
        return
    console.print(term_text(
        f"ingested {plan.frames} frames of {name} as attempt {plan.attempt_id} "
        f"(trace {plan.trace_id}, {plan.api}, {plan.framing}, drain {plan.drain or 'none'}): "
        f"{result.appended} events at positions {result.positions[0]}–{result.positions[-1]}"))


def provider_warnings(plan: IngestPlan, provider: str) -> list[str]:
    """A named --provider that recognized none of the frames is almost always the wrong one:
    the attempt is stored (its bytes are evidence) but can never be released."""
    if provider == "auto" or plan.frames == 0:
        return []
    recognized = sum(1 for e in plan.events if e.event.type == "frame.received"
                     and set(e.event.kinds) - {"unknown", "raw"})
    if recognized:
        return []
    return [f"--provider {provider} recognized none of the {plan.frames} frames; is this "
            f"capture from another provider? (--provider auto tells them apart)"]


# Inputs at least this large get a progress bar while they decode.
PROGRESS_MIN_BYTES = 4 * 1024 * 1024


@contextmanager
def decode_progress(name: str, total: int, *, quiet: bool) -> Iterator[Callable[[int], None] | None]:
    """A Rich progress bar over decoded bytes for large inputs (stderr; never with --json)."""
    if quiet or total < PROGRESS_MIN_BYTES:
        yield None
        return
    from rich.progress import (
        BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (TextColumn("decoding {task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task_id = bar.add_task(safe_text(name), total=total)
        yield lambda done: bar.update(task_id, completed=done)


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
    filters = {"attempt_id": attempt, "trace_id": trace, "after": after}
    with open_store(db, create=False) as store:
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
def attempts(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List attempts with their trace, API and event counts."""
    with open_store(db, create=False) as store:
        listing = store.attempt_summaries()
    if as_json:
        emit_json({"attempts": listing})
        return
    from rich.table import Table

    from tracestore.cli.tables import token_column

    table = Table(title=f"{len(listing)} attempts")
    token_column(table, "attempt", [r["attempt_id"] for r in listing])
    token_column(table, "trace", [r["trace_id"] or "" for r in listing])
    table.add_column("api", overflow="ellipsis")
    table.add_column("events", justify="right", no_wrap=True)
    table.add_column("first pos", justify="right", no_wrap=True)
    for row in listing:
        table.add_row(term_text(row["attempt_id"]), term_text(row["trace_id"] or ""),
                      term_text(row["api"] or ""), str(row["events"]),
                      str(row["first_position"]))
    console.print(table)


#: What the head hash is, said where it is shown: it covers recording times, so two stores
#: holding the same events show different heads (only an exact export/import keeps it).
HEAD_HASH_NOTE = ("the head hash chains every event with the time it was recorded: it names "
                  "this log, and another store holding the same events has another one")


@app.command()
@handles_errors
def verify(
    checkpoint: Annotated[Optional[Path], typer.Option(
        help="A signed head from `tracestore checkpoint`: also prove the log still extends "
             "it (no tail deleted, nothing rewritten and re-hashed, no fork).")] = None,
    key: Annotated[Optional[Path], typer.Option(
        "--key", help="The checkpoint's public (or private) key file. Default: the PEM text "
                      "in $TRACESTORE_CHECKPOINT_KEY.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Recompute the hash chain and re-hash stored captures; exit non-zero naming the first
    broken position."""
    expected = None
    if checkpoint is not None:
        from tracestore.store import checkpoint as ck
        from tracestore.store.verify import Expected

        signed = ck.read_checkpoint(checkpoint)
        ck.check_signature(signed, key)
        expected = Expected(signed.position, signed.hash)
    with open_store(db, create=False) as store:
        result = store.verify(expected=expected)
    if as_json:
        emit_json({"ok": result.ok, "count": result.count,
                   "first_broken_position": result.first_broken_position,
                   "reason": result.reason, "head_hash": result.head_hash,
                   "captures_checked": result.captures_checked,
                   "checkpoint_position": result.checkpoint_position})
        if not result.ok:
            raise typer.Exit(ChainBroken.exit_code)
        return
    if result.ok:
        anchored = (f", extends the signed head at position {result.checkpoint_position}"
                    if result.checkpoint_position is not None else "")
        console.print(f"ok {result.count} events (head {result.head_hash[:16]}){anchored}")
        console.print(term_text(HEAD_HASH_NOTE, "dim"))
        return
    assert result.first_broken_position is not None
    raise ChainBroken(f"chain broken at position {result.first_broken_position}: "
                      f"{result.reason} ({result.count} events verified before it)",
                      position=result.first_broken_position)
