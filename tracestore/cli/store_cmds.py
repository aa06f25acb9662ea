"""Store commands that write: init, ingest (reading commands are in ``log_cmds``).

Thin: read the input files (captures, task rules, contracts, bindings, cases) and render;
what an input means and how it is written is ``tracestore.ingest.pipeline``'s.  The file
readers live here so every command module imports them from one place (below the others).
"""

from __future__ import annotations

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
    from tracestore.contracts.model import Contract
    from tracestore.events import TaskRule
    from tracestore.ingest.pipeline import PlanIngested, RunsIngested

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


def read_contract(path: Path) -> Contract:
    """Load and check a contract file (``invalid_contract`` / ``unsafe_pattern`` …)."""
    from tracestore.contracts.model import parse_contract_bytes

    return parse_contract_bytes(read_input(path), name=str(path))


def read_binding(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    from tracestore.contracts.binding import parse_binding_bytes

    return parse_binding_bytes(read_input(path), name=str(path))


def read_cases(path: Path | None) -> dict[str, Any] | None:
    """Agent runs: the cases file (case id -> case)."""
    from tracestore.ingest.agent import load_cases

    return load_cases(read_input(path)) if path is not None else None


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
             "bedrock-converse-stream, gemini, xai, ollama, app-frames, cohere-v2.")] = "auto",
    chunk_size: Annotated[Optional[int], typer.Option(
        min=1, help="Feed the decoder in chunks of this many bytes (boundaries change nothing).")] = None,
    task: Annotated[Optional[Path], typer.Option(
        help="JSON file with the trace's semantic rule {answer_patterns, forbidden_patterns}.")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="auto, capture, agent-report (seed 001 comparison), agent-result "
                         "(one run result) or realtime-session (WebSocket messages).")] = "auto",
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
    resume_of: Annotated[Optional[str], typer.Option(
        "--resume-of", metavar="ATTEMPT",
        help="This capture is a second connection resuming ATTEMPT's OpenAI Responses "
             "stream (starting_after): recorded with it as one new attempt of its trace.")] = None,
    stop_after_byte: Annotated[Optional[int], typer.Option(
        "--stop-after-byte", min=0, metavar="N",
        help="The user pressed Stop after the app had received N bytes: a local Stop is "
             "placed after the frames that end within them.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record one attempt from a file: every native frame becomes one event, in one transaction.

    An agent run file (seed 001's comparison report, or one run result) records each run as
    its own trace and attempt instead.  A realtime session (JSON Lines of
    {"dir", "t", "data"} WebSocket messages, or a HAR file whose WebSocket entry has
    _webSocketMessages) is one trace with one attempt per response; --attempt is then the
    prefix of their ids.
    """
    from dataclasses import replace

    from tracestore.ingest.pipeline import (
        IngestOptions, agent_format, har_as_session, is_session_input, plan_input, write_plan,
        write_resume, write_runs, write_session,
    )
    from tracestore.ingest.plan import Bindings

    # Only files are read here; what they mean is the pipeline's (tracestore.ingest).
    data = read_input(file)
    name = "stdin" if file == STDIN else file.name  # messages, progress, default ids
    if resume_of is not None:
        options = IngestOptions(
            filename=name, attempt_id=attempt, trace_id=trace, chunk_size=chunk_size,
            task=read_task(task), origin=origin, retry_of=retry_of, resume_of=resume_of,
            stop_after_byte=stop_after_byte,
            bindings=Bindings(read_contract(contract) if contract else None,
                              read_binding(binding)))
        with open_store(db) as store:
            render_plan(write_resume(store, data, options), name, as_json=as_json)
        return
    data = har_as_session(data, fmt)
    if is_session_input(data, fmt):
        options = IngestOptions(
            filename=name, attempt_id=attempt, trace_id=trace, task=read_task(task),
            bindings=Bindings(read_contract(contract) if contract else None,
                              read_binding(binding)),
            origin=origin, retry_of=retry_of, stop_after_byte=stop_after_byte)
        with open_store(db) as store:
            render_runs(write_session(store, data, options), name, as_json=as_json)
        return
    runs_format = agent_format(data, fmt)
    if runs_format is not None:
        options = IngestOptions(filename=name, attempt_id=attempt, trace_id=trace,
                                cases=read_cases(cases))
        with open_store(db) as store:
            runs = write_runs(store, data, runs_format, options)
        render_runs(runs, name, as_json=as_json)
        return
    # Rule, contract and binding are checked before anything is decoded or written.
    options = IngestOptions(
        filename=name, attempt_id=attempt, trace_id=trace, provider=provider,
        chunk_size=chunk_size, task=read_task(task),
        bindings=Bindings(read_contract(contract) if contract else None, read_binding(binding)),
        origin=origin, retry_of=retry_of, stop_after_byte=stop_after_byte)
    with decode_progress(name, len(data), quiet=as_json) as progress:
        plan = plan_input(data, replace(options, progress=progress))
    with open_store(db) as store:
        # The frames and the final decision they imply: one transaction.
        done = write_plan(store, plan, options)
    del plan, data
    render_plan(done, name, as_json=as_json)


def render_plan(done: PlanIngested, name: str, *, as_json: bool) -> None:
    for warning in done.warnings:
        err_console.print(term_text(f"warning: {warning}", "yellow"))
    w = done.written
    summary: dict[str, Any] = {
        "attempt_id": done.attempt_id, "trace_id": done.trace_id, "api": done.api,
        "kind": done.kind, "framing": done.framing, "sha256": done.sha256,
        "frames": done.frames, "drain": done.drain, "appended": w.appended,
        "skipped": w.skipped, "positions": list(w.positions),
        "decisions_recorded": list(w.decisions_recorded),
    }
    if done.warnings:
        summary["warnings"] = list(done.warnings)
    if as_json:
        emit_json(summary)
        return
    if w.appended == 0:
        console.print(term_text(f"already ingested: attempt {done.attempt_id} "
                                f"({w.skipped} events present, nothing added)"))
        return
    console.print(term_text(
        f"ingested {done.frames} frames of {name} as attempt {done.attempt_id} "
        f"(trace {done.trace_id}, {done.api}, {done.framing}, drain {done.drain or 'none'}): "
        f"{w.appended} events at positions {w.positions[0]}–{w.positions[-1]}"))


def render_runs(done: RunsIngested, name: str, *, as_json: bool) -> None:
    w = done.written
    summary = {"kind": done.format, "sha256": done.sha256, "run_count": len(done.attempts),
               "attempt_ids": list(done.attempts), "appended": w.appended,
               "skipped": w.skipped, "positions": list(w.positions),
               "decisions_recorded": list(w.decisions_recorded)}
    what = "response" if done.format == "realtime-session" else "agent run"
    runs = f"{len(done.attempts)} {what}{'' if len(done.attempts) == 1 else 's'}"
    if as_json:
        # One key, one shape (docs/json.md): "attempts" and "runs" are lists of objects
        # elsewhere, "kind" names the input in ingest-batch.  The old keys stay one release.
        emit_json({**summary, "format": done.format, "runs": len(done.attempts),
                   "attempts": list(done.attempts)})
    elif w.appended == 0:
        console.print(term_text(f"already ingested: {runs} of {name} "
                                f"({w.skipped} events present, nothing added)"))
    else:
        console.print(term_text(
            f"ingested {runs} of {name} ({done.format}): "
            f"{w.appended} events at positions {w.positions[0]}–{w.positions[-1]}"))


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
