"""Where OTLP spans go and how a refusal is reported: the standard OpenTelemetry variables.

- endpoint: ``--endpoint``, else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as given),
  else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces`` (the specification's rule);
- headers: ``OTEL_EXPORTER_OTLP_HEADERS``, then ``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, then
  each ``--header K=V`` (a later one wins); values are percent-decoded as the spec says;
- resource: ``service.name=tracestore`` and the version, then ``OTEL_RESOURCE_ATTRIBUTES``,
  then ``OTEL_SERVICE_NAME``, then ``--service-name``.

Spans are encoded by the official OTLP encoder and posted as OTLP/HTTP protobuf; a refusal
raises ``TracestoreError(code="export_failed")`` naming the HTTP status and the first line
of the body (escaped: it is the receiver's text, not ours).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from tracestore.errors import InputError, TracestoreError


def parse_pairs(text: str, what: str) -> dict[str, str]:
    """``k=v,k2=v2`` (the OTEL_* list form) → a dict; percent-decoded."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{what} takes key=value pairs separated by commas, got "
                             f"{item.strip()!r}", code="invalid_option")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def endpoint_from(option: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    if option:
        return option
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return base.rstrip("/") + "/v1/traces" if base else None


def headers_from(options: Sequence[str], env: Mapping[str, str] = os.environ
                 ) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        headers.update(parse_pairs(env.get(name, ""), name))
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--header takes K=V, got {option!r}", code="invalid_option")
        headers[key.strip()] = value
    return headers


def resource_from(service_name: str | None, env: Mapping[str, str] = os.environ
                  ) -> dict[str, Any]:
    import tracestore

    attrs: dict[str, Any] = {"service.name": "tracestore",
                             "service.version": tracestore.__version__}
    attrs.update(parse_pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", ""),
                             "OTEL_RESOURCE_ATTRIBUTES"))
    if env.get("OTEL_SERVICE_NAME"):
        attrs["service.name"] = env["OTEL_SERVICE_NAME"]
    if service_name:
        attrs["service.name"] = service_name
    return attrs


def first_line(body: bytes, limit: int = 200) -> str:
    """The first line of a receiver's reply, escaped (controls and quotes as JSON writes
    them), at most ``limit`` characters."""
    import json

    text = body.decode("utf-8", "replace").strip().splitlines()
    line = text[0] if text else ""
    if len(line) > limit:
        line = line[: limit - 1] + "…"
    return json.dumps(line, ensure_ascii=False)[1:-1]


def send_otlp_http(spans: Sequence[Any], endpoint: str, *,
                   headers: Mapping[str, str] | None = None, timeout: float = 10.0) -> None:
    """Post the spans to an OTLP/HTTP endpoint (``…/v1/traces``); raise when refused."""
    import httpx
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    body = encode_spans(list(spans)).SerializeToString()
    sent = {"Content-Type": "application/x-protobuf", **(headers or {})}
    try:
        reply = httpx.post(endpoint, content=body, headers=sent, timeout=timeout)
    except httpx.HTTPError as exc:
        raise TracestoreError(f"the OTLP endpoint {endpoint} could not be reached: "
                              f"{type(exc).__name__}: {first_line(str(exc).encode())}",
                              code="export_failed") from None
    if not 200 <= reply.status_code < 300:
        raise TracestoreError(
            f"the OTLP endpoint {endpoint} refused the {len(spans)} spans: HTTP "
            f"{reply.status_code}: {first_line(reply.content) or '(empty body)'}",
            code="export_failed", http_status=reply.status_code)
