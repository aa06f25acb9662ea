"""Store commands that write: init, ingest (reading commands are in ``log_cmds``)."""

from __future__ import annotations

import dataclasses
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
    handles_errors,
    open_store,
    term_text,
)
from tracestore.errors import InputError

# Heavy modules (SQLAlchemy, the pydantic event models, the decoders) are imported inside
# the commands that use them, so `tracestore --help` and `--version` start fast.
if TYPE_CHECKING:
    from tracestore.events import TaskRule
    from tracestore.ingest import IngestPlan
    from tracestore.store.log import AppendResult, EventStore, WriteView

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


def append_plan(store: EventStore, plan: IngestPlan, *, decide: bool = True) -> AppendResult:
    """Append an ingest plan in ONE transaction, refusing to mix inputs in one attempt.

    With ``decide`` the release decisions the plan makes final are derived from it while it
    is written and appended in the same transaction (``result.followed`` holds their
    positions): a crash leaves all of it or none of it."""
    from tracestore.events import attempt_stream, trace_stream
    from tracestore.ingest.decide import PlanDecisions

    tap = PlanDecisions({plan.trace_id: [plan.attempt_id]}) if decide else None

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
        if tap is not None:
            tap.prepare(view)
        return plan.events, [plan.blob]

    return store.append_with(build, tap=tap)


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
    from tracestore.store.bulk import paused_gc
    from tracestore.cli.contract_cmds import read_binding, read_contract
    from tracestore.ingest import Bindings, plan_ingest

    data = read_input(file)
    name = "stdin" if file == STDIN else file.name  # messages, progress, default ids
    if fmt != "capture":
        from tracestore.ingest.agent import FORMATS, sniff

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
    from tracestore.ingest.evidence import check_retry_of, with_app_evidence

    plan = with_app_evidence(plan, retry_of=retry_of, stop_after_byte=stop_after_byte)
    with open_store(db) as store:
        check_retry_of(store, plan.trace_id, retry_of)
        # The frames and the final decision they imply: one transaction.
        result = append_plan(store, plan)
        warnings = provider_warnings(plan, provider)
        plan = dataclasses.replace(plan, events=[], blob=b"")
        del data
        decided = list(result.followed)
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
    # Stop at the first recognized frame: a large projection's events are planned lazily,
    # so counting them all would plan the whole body a second time.
    if any(e.event.type == "frame.received" and set(e.event.kinds) - {"unknown", "raw"}
           for e in plan.events):
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
    with Progress(*columns, console=err_console.resolve(), transient=True) as bar:
        task_id = bar.add_task(safe_text(name), total=total)
        yield lambda done: bar.update(task_id, completed=done)
