"""Reviews as Phoenix span annotations (``export --format otlp --annotations phoenix``).

Phoenix keeps human judgments as span annotations (``POST /v1/span_annotations``), where
its users look for them; the span events (``tracestore.review.*``) stay in the spans for
every other receiver.  Each review field becomes one annotation per attempt span, named by
the field, its latest value as the label (an amendment replaces it: the ``identifier`` is
stable per template and field), annotator kind ``HUMAN``; each approval is an annotation
named ``approved``.  Posted after the spans, retried while Phoenix has not stored the span
yet (its OTLP intake is asynchronous).
"""

# (No ``from __future__ import annotations``: it would bind the name ``annotations``, the
# public function below.)
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tracestore.errors import TracestoreError
from tracestore.events import StoredEvent


def annotations(events: Sequence[StoredEvent]) -> list[dict[str, Any]]:
    """The Phoenix annotations of every review record in ``events`` (latest value wins)."""
    from tracestore.export.otlp import _id

    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for stored in events:
        event = stored.event
        if stored.type not in ("review.field_set", "review.approved"):
            continue
        span_id = f"{_id('attempt', event.attempt_id, 8):016x}"
        if stored.type == "review.field_set":
            key = (event.attempt_id, event.template, event.field)
            previous = latest.get(key)
            latest[key] = {
                "span_id": span_id, "name": event.field, "annotator_kind": "HUMAN",
                "identifier": f"tracestore:{event.template}:{event.field}",
                "result": {"label": event.value,
                           "explanation": f"set by {event.reviewer} at #{stored.position}"},
                "metadata": {"template": event.template, "reviewer": event.reviewer,
                             "position": stored.position, "evidence": list(event.evidence),
                             "amends_position": previous["metadata"]["position"]
                             if previous else None}}
        else:
            latest[(event.attempt_id, event.template, "approved:" + event.reviewer)] = {
                "span_id": span_id, "name": "approved", "annotator_kind": "HUMAN",
                "identifier": f"tracestore:{event.template}:approved:{event.reviewer}",
                "result": {"label": "approved",
                           "explanation": f"approved by {event.reviewer} at "
                                          f"#{stored.position}"},
                "metadata": {"template": event.template, "reviewer": event.reviewer,
                             "position": stored.position}}
    return list(latest.values())


def post_annotations(items: Sequence[dict[str, Any]], traces_endpoint: str, *,
                     headers: Mapping[str, str] | None = None, wait: float = 15.0) -> int:
    """Post ``items`` to the Phoenix serving ``traces_endpoint``; the number stored."""
    import httpx

    from tracestore.export.otlp_send import first_line

    if not items:
        return 0
    base = traces_endpoint.removesuffix("/").removesuffix("/v1/traces")
    url = f"{base}/v1/span_annotations?sync=true"
    deadline = time.monotonic() + wait
    while True:
        try:
            reply = httpx.post(url, json={"data": list(items)}, headers=dict(headers or {}),
                               timeout=10.0)
        except httpx.HTTPError as exc:
            raise TracestoreError(f"Phoenix at {base} could not be reached for the "
                                  f"annotations: {type(exc).__name__}",
                                  code="export_failed") from None
        if reply.status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.5)  # the spans are not stored yet
            continue
        if not 200 <= reply.status_code < 300:
            raise TracestoreError(
                f"Phoenix at {base} refused the {len(items)} annotations: HTTP "
                f"{reply.status_code}: {first_line(reply.content) or '(empty body)'}",
                code="export_failed", http_status=reply.status_code)
        return len(reply.json().get("data", []))
