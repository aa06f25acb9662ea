"""Where OTLP spans go and how a refusal is reported: the standard OpenTelemetry variables.

- endpoint: ``--endpoint``, else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as given),
  else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces`` (the specification's rule);
- headers: ``OTEL_EXPORTER_OTLP_HEADERS``, then ``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, then
  each ``--header K=V`` (a later one wins); values are percent-decoded as the spec says;
- resource: ``service.name=tracestore`` and the version, then ``OTEL_RESOURCE_ATTRIBUTES``,
  then ``OTEL_SERVICE_NAME``, then ``--service-name``.

Spans are encoded by the official OTLP encoder and posted as OTLP/HTTP protobuf.  A
receiver that is busy or still starting (a timeout, HTTP 429/502/503/504) gets the post
again with exponential backoff, a bounded number of times; a refusal raises
``TracestoreError(code="export_failed")`` naming the HTTP status, the first line of the body
(escaped: it is the receiver's text, not ours) and the number of tries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
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


#: Replies that say "not now" rather than "no": the post is tried again.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
#: At most this many posts; the waits between them double from the base (environment
#: ``TRACESTORE_OTLP_RETRY_BASE``, seconds) and together stay under ``MAX_WAIT`` seconds.
TRIES = 5
RETRY_BASE = 1.0
MAX_WAIT = 30.0


def retry_base(env: Mapping[str, str] = os.environ) -> float:
    text = env.get("TRACESTORE_OTLP_RETRY_BASE", "")
    try:
        value = float(text) if text else RETRY_BASE
    except ValueError:
        raise InputError(f"TRACESTORE_OTLP_RETRY_BASE takes seconds, got {text!r}",
                         code="invalid_option") from None
    return max(value, 0.0)


def _retry_after(reply: Any) -> float | None:
    """A ``Retry-After`` of delay-seconds (an HTTP date is not read: the backoff stands)."""
    text = reply.headers.get("retry-after", "").strip()
    return float(text) if text.isdigit() else None


def send_otlp_http(spans: Sequence[Any], endpoint: str, *,
                   headers: Mapping[str, str] | None = None, timeout: float = 10.0,
                   tries: int = TRIES, base: float | None = None, max_wait: float = MAX_WAIT,
                   report: Callable[[dict[str, Any]], None] | None = None,
                   sleep: Callable[[float], None] | None = None) -> int:
    """Post the spans to an OTLP/HTTP endpoint (``…/v1/traces``); the number of posts made.

    A timed-out post or a 429/502/503/504 reply is tried again, up to ``tries`` posts,
    waiting ``base`` × 2ⁿ seconds (a ``Retry-After`` in seconds instead, when the receiver
    sends one), all waits together capped at ``max_wait``; ``report`` hears of each retry.
    Any other refusal, an unreachable endpoint, or the last retryable failure raises
    ``export_failed``."""
    import time

    import httpx
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    body = encode_spans(list(spans)).SerializeToString()
    sent = {"Content-Type": "application/x-protobuf", **(headers or {})}
    base = retry_base() if base is None else base
    waited = 0.0
    for attempt in range(1, tries + 1):
        reply, why, hint = None, "", None
        try:
            reply = httpx.post(endpoint, content=body, headers=sent, timeout=timeout)
        except httpx.TimeoutException as exc:
            why = f"timed out ({type(exc).__name__})"
        except httpx.HTTPError as exc:
            raise TracestoreError(f"the OTLP endpoint {endpoint} could not be reached: "
                                  f"{type(exc).__name__}: {first_line(str(exc).encode())}",
                                  code="export_failed", tries=attempt) from None
        if reply is not None:
            if 200 <= reply.status_code < 300:
                return attempt
            if reply.status_code not in RETRYABLE_STATUSES:
                raise _refused(spans, endpoint, reply, attempt)
            why, hint = f"HTTP {reply.status_code}", _retry_after(reply)
        delay = min(hint if hint is not None else base * 2 ** (attempt - 1),
                    max_wait - waited)
        if attempt == tries or delay < 0 or waited >= max_wait:
            if reply is not None:
                raise _refused(spans, endpoint, reply, attempt)
            raise TracestoreError(f"the OTLP endpoint {endpoint} did not answer in "
                                  f"{timeout:g} s, {attempt} tries", code="export_failed",
                                  tries=attempt)
        if report is not None:
            report({"retry": attempt, "of": tries - 1, "endpoint": endpoint, "reason": why,
                    "wait_s": round(delay, 3)})
        (sleep or time.sleep)(delay)
        waited += delay
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def _refused(spans: Sequence[Any], endpoint: str, reply: Any, tries: int) -> TracestoreError:
    after = f" ({tries} tries)" if tries > 1 else ""
    return TracestoreError(
        f"the OTLP endpoint {endpoint} refused the {len(spans)} spans: HTTP "
        f"{reply.status_code}: {first_line(reply.content) or '(empty body)'}{after}",
        code="export_failed", http_status=reply.status_code, tries=tries)
