"""``tracestore export`` and ``tracestore import``: the log for other tools, and back.

Thin: read rows or events from the store, hand them to ``tracestore.export`` (JSON lines,
OpenTelemetry), write the result atomically or post it.  Heavy imports (the store, the
OpenTelemetry SDK) happen inside the commands.
"""

from __future__ import annotations

import enum
import io
import sys
from pathlib import Path
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, emit_json, err_console, handles_errors, open_store, term_text,
)
from tracestore.errors import InputError, NotFound


class ExportFormat(str, enum.Enum):
    jsonl = "jsonl"
    otlp = "otlp"


class Redaction(str, enum.Enum):
    text = "text"


class Annotations(str, enum.Enum):
    phoenix = "phoenix"


@app.command()
@handles_errors
def export(
    fmt: Annotated[ExportFormat, typer.Option(
        "--format", help="jsonl: every event as stored (import reads it back); "
                         "otlp: OpenTelemetry spans, a root per turn and one per "
                         "attempt under it.")] = ExportFormat.jsonl,
    trace: Annotated[Optional[str], typer.Option(
        "--trace", metavar="TRACE", show_default=False, help="Only this trace.")] = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", metavar="FILE", show_default=False,
        help="Write to FILE (atomically) instead of standard output.")] = None,
    endpoint: Annotated[Optional[str], typer.Option(
        "--endpoint", metavar="URL", show_default=False,
        help="With --format otlp: post the spans to this OTLP/HTTP traces URL "
             "(for example http://127.0.0.1:4318/v1/traces). Without --out the default "
             "is $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT "
             "+ /v1/traces.")] = None,
    redact: Annotated[Optional[Redaction], typer.Option(
        "--redact", show_default=False,
        help="text: replace model text with its sha256 (raw captures are left out).")] = None,
    content: Annotated[bool, typer.Option(
        "--content", help="With --format otlp: put the answer, the request's messages and "
                          "native frames in the spans (off by default, as the GenAI "
                          "conventions ask; --redact text wins).")] = False,
    header: Annotated[Optional[list[str]], typer.Option(
        "--header", metavar="K=V", show_default=False,
        help="With --format otlp: an HTTP header for the endpoint (repeatable; after "
             "$OTEL_EXPORTER_OTLP_HEADERS).")] = None,
    service_name: Annotated[Optional[str], typer.Option(
        "--service-name", metavar="NAME", show_default=False,
        help="With --format otlp: the resource's service.name (after "
             "$OTEL_RESOURCE_ATTRIBUTES and $OTEL_SERVICE_NAME).")] = None,
    annotate: Annotated[Optional[Annotations], typer.Option(
        "--annotations", show_default=False,
        help="With --format otlp and an endpoint: phoenix also posts review fields and "
             "approvals as Phoenix span annotations (POST /v1/span_annotations).")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export events as JSON lines (lossless) or as OpenTelemetry spans."""
    import tracestore

    from tracestore.export.otlp_send import endpoint_from, headers_from, resource_from

    if fmt is not ExportFormat.otlp and (endpoint or content or header or service_name):
        raise InputError("--endpoint, --content, --header and --service-name are for "
                         "OTLP spans: use them with --format otlp", code="invalid_option")
    if endpoint is not None and out is not None:
        raise InputError("--endpoint sends OTLP spans: use it without --out",
                         code="invalid_option")
    if endpoint is not None:  # as typed: an empty --endpoint is refused, not "unset"
        _check_endpoint(endpoint)
    if fmt is ExportFormat.otlp:
        # The standard variables: an OTEL_EXPORTER_OTLP_*ENDPOINT sends unless --out is given.
        endpoint = endpoint if out is not None else endpoint_from(endpoint)
        headers = headers_from(header or [])
        resource = resource_from(service_name)
    if annotate is not None and (fmt is not ExportFormat.otlp or out is not None):
        raise InputError("--annotations posts to an OTLP endpoint: use it with --format "
                         "otlp and without --out", code="invalid_option")
    lost, annotated = 0, None
    with open_store(db, create=False, read_only=True) as store:
        if trace is not None and trace not in store.trace_ids():
            raise NotFound(f"no trace {trace!r} in the log", code="trace_not_found",
                           trace_id=trace)
        if fmt is ExportFormat.jsonl:
            from tracestore.export.jsonl import export_lines

            lines = export_lines(lambda: store.iter_rows(trace_id=trace), trace_id=trace,
                                 redact=redact is not None, get_blob=store.get_blob,
                                 tracestore_version=tracestore.__version__,
                                 legacy_chain_end=store.legacy_chain_end())
            count = _write(lines, out)
        else:
            from tracestore.export.otlp import build_spans, dropped, otlp_json_lines
            from tracestore.export.otlp_send import send_otlp_http

            events = list(store.iter_events(trace_id=trace))
            spans = build_spans(events, redact=redact is not None, content=content,
                                resource=resource)
            lost = dropped(spans)
            if endpoint is not None:
                send_otlp_http(spans, endpoint, headers=headers,
                               report=_report_retry(as_json))
                if annotate is Annotations.phoenix:
                    from tracestore.export.phoenix import annotations, post_annotations

                    annotated = post_annotations(annotations(events), endpoint,
                                                 headers=headers)
            else:
                _write([otlp_json_lines(spans)], out)
            count = len(spans)
            if lost:
                err_console.print(term_text(
                    f"warning: the OpenTelemetry SDK dropped {lost} span events, attributes "
                    "or links over its limits"))
    what = "lines" if fmt is ExportFormat.jsonl else "spans"
    where = endpoint or (str(out) if out is not None else None)
    if as_json and where is not None:
        extra: dict[str, int] = {"dropped": lost} if fmt is ExportFormat.otlp else {}
        if annotated is not None:
            extra["annotations"] = annotated
        emit_json({"format": fmt.value, what: count, "to": where, **extra})
    elif where is not None:
        note = f" ({lost} dropped)" if fmt is ExportFormat.otlp and lost else ""
        if annotated is not None:
            note += f" and {annotated} review annotations"
        err_console.print(term_text(f"exported {count} {what} to {where}{note}"))


def _report_retry(as_json: bool) -> Callable[[dict[str, Any]], None]:
    """Each retry of a post as one line on standard error (a JSON object with --json)."""
    import json

    def report(retry: dict[str, Any]) -> None:
        if as_json:
            sys.stderr.write(json.dumps(retry, ensure_ascii=False) + "\n")
            return
        err_console.print(term_text(
            f"retry {retry['retry']}/{retry['of']}: the OTLP endpoint {retry['endpoint']} "
            f"answered {retry['reason']}; trying again in {retry['wait_s']:g} s"))
    return report


def _check_endpoint(endpoint: str) -> None:
    """An http(s) URL with a host and a port in range, or ``invalid_endpoint`` (exit 2) at
    once -- not 10-22 s of retries ending in exit 1."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(endpoint)
        port = parts.port  # ValueError when not a number or out of 0-65535
    except ValueError:
        parts, port = None, -1
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
            or port == 0 or port == -1:
        raise InputError(f"--endpoint {endpoint!r} is not an http(s) URL with a host and a "
                         "port between 1 and 65535 (for example "
                         "http://127.0.0.1:4318/v1/traces)", code="invalid_endpoint",
                         endpoint=endpoint)


def _write(chunks: object, out: Optional[Path]) -> int:
    """Lines to ``out`` (atomically) or standard output; the number of lines written."""
    count = 0
    if out is None:
        for chunk in chunks:  # type: ignore[attr-defined]
            sys.stdout.write(chunk)
            count += chunk.count("\n")
        return count
    from tracestore.cli.files import atomic_writer

    with atomic_writer(out) as handle:
        for chunk in chunks:  # type: ignore[attr-defined]
            handle.write(chunk.encode("utf-8"))
            count += chunk.count("\n")
    return count


@app.command(name="import")
@handles_errors
def import_(
    file: Annotated[Path, typer.Argument(
        metavar="FILE", help="A tracestore export (export --format jsonl); - reads "
                             "standard input.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Load a JSON lines export into an empty store (verify passes afterwards).

    A complete export comes back byte for byte, same hashes included; a --trace or
    --redact export gets new positions and a new hash chain.
    """
    from tracestore.export.jsonl import read_export

    if str(file) == "-":
        handle = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    elif not file.exists():
        raise InputError(f"{file} does not exist", code="file_not_found", path=str(file))
    elif file.is_dir():
        raise InputError(f"{file} is a directory, not a file", code="not_a_file",
                         path=str(file))
    else:  # a file, a FIFO or a device: read line by line, each line bounded
        handle = file.open(encoding="utf-8")
    with handle, open_store(db) as store:
        try:
            parsed = read_export(handle, str(file))
            same = bool(parsed.header.get("complete"))
            legacy = parsed.header.get("legacy_chain_end", 0) if same else 0
            if type(legacy) is not int or legacy < 0:
                raise InputError(f"{file}: header field 'legacy_chain_end' is not a position",
                                 code="invalid_export")
            count, head = store.import_rows(parsed.rows, parsed.blobs, same_hashes=same,
                                            legacy_chain_end=legacy)
        except UnicodeDecodeError as exc:
            raise InputError(f"{file} is not UTF-8 text", code="invalid_export") from exc
    result = {"events": count, "blobs": len(parsed.blobs), "same_hashes": same,
              "head_hash": head}
    if as_json:
        emit_json(result)
        return
    chain = ("same hashes as the source store" if same
             else "positions renumbered, hash chain computed anew")
    sys.stdout.write(f"imported {count} events and {len(parsed.blobs)} captures "
                     f"({chain}); head {head[:16]}\n")
