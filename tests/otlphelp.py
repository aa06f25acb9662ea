"""OTLP helpers shared by the export tests: a receiver stub and readers of OTLP/JSON."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def otlp_spans(doc: dict) -> list[dict]:
    return [span for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]
            for span in ss["spans"]]


def attributes(item: dict) -> dict:
    def value(v: dict) -> Any:
        if "arrayValue" in v:
            return [value(x) for x in v["arrayValue"].get("values", [])]
        return next(iter(v.values()))
    return {a["key"]: value(a["value"]) for a in item.get("attributes", [])}


def pb_attributes(item: Any) -> dict:
    """Attributes of a protobuf span/event/resource as plain values."""
    def value(v: Any) -> Any:
        which = v.WhichOneof("value")
        if which == "array_value":
            return [value(x) for x in v.array_value.values]
        return getattr(v, which)
    return {a.key: value(a.value) for a in item.attributes}


class Collector:
    """An OTLP/HTTP receiver stub on 127.0.0.1, an ephemeral port, for one test."""

    def __init__(self, status: int = 200, body: bytes | None = None) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest, ExportTraceServiceResponse,
        )

        received = self.received = []
        self.headers: list[dict[str, str]] = []
        headers = self.headers

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                data = self.rfile.read(int(self.headers["Content-Length"]))
                headers.append({k.lower(): v for k, v in self.headers.items()})
                received.append((self.path, self.headers["Content-Type"],
                                 ExportTraceServiceRequest.FromString(data)))
                reply = body if body is not None else \
                    ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf" if body is None
                                 else "text/plain")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.timeout = 5
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.base}/v1/traces"
        # polled every 20 ms (not 0.5 s), so that leaving it does not wait on the poll
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.02}, daemon=True)

    def spans(self) -> list[Any]:
        return [s for _, _, request in self.received for rs in request.resource_spans
                for ss in rs.scope_spans for s in ss.spans]

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def split_turns(spans: list[dict]) -> tuple[dict[str, dict], dict[str, dict]]:
    """OTLP/JSON spans → (trace id → the turn's root span, attempt id → attempt span)."""
    turns, attempts = {}, {}
    for span in spans:
        attrs = attributes(span)
        if "tracestore.attempt_id" in attrs:
            attempts[attrs["tracestore.attempt_id"]] = span
        else:
            turns[attrs["tracestore.trace_id"]] = span
    return turns, attempts
