"""SDK capture for boto3 ``bedrock-runtime`` ``converse_stream``.

    client = boto3.client("bedrock-runtime")
    recording = record_bedrock(client, trace)     # once; application code unchanged
    response = client.converse_stream(modelId=..., messages=...)
    for event in response["stream"]: ...

botocore hands the application parsed events, decoded from the raw AWS event-stream body
it reads from the connection.  ``record_bedrock`` registers two handlers on the client's
event system: one keeps the call's settings (model id, inference configuration; the
messages and system text only when the recorder keeps prompts, ``recording.prompts``), one wraps the raw body so the bytes are recorded exactly as botocore reads
them.  The rules are those of ``httpx_capture`` (shared in ``body``): a chunk is recorded when the next one is
read, closing the stream early (``response["stream"].close()``) records a local Stop, a
read error drains ``reset`` (connection broke) or ``error`` with the exception class, and a
recording failure never reaches the application (``recording.failures``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tracestore.recording.body import BodyAttempt, BodyRecording

_EVENT = "bedrock-runtime.ConverseStream"
_CONTENT_PARAMS = frozenset({"messages", "system", "toolConfig", "promptVariables"})


def _broken_errors() -> tuple[type[BaseException], ...]:
    try:
        from urllib3.exceptions import ProtocolError
    except ModuleNotFoundError:  # pragma: no cover - botocore always brings urllib3
        return ()
    return (ProtocolError,)


class BodyRecordingBody:
    """Stands in for botocore's raw body: same ``stream``/``close``, bytes recorded."""

    def __init__(self, raw: Any, attempt: BodyAttempt) -> None:
        self._raw, self._attempt = raw, attempt
        self.tracestore_handle = attempt.handle  # ``turn.attempt_of(response)`` finds it
        attempt.watch(self)

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        with self._attempt.reading():
            for chunk in self._raw.stream(*args, **kwargs):
                self._attempt.received(chunk)
                yield chunk

    def close(self) -> None:
        self._attempt.closed_early()
        self._raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def _raw_size(raw: Any) -> int | None:
    """The body's content-length from urllib3's response under botocore's body, if any."""
    headers = getattr(getattr(raw, "_raw_stream", None), "headers", None) or {}
    from tracestore.recording.httpx_capture import body_size

    return body_size(headers) if hasattr(headers, "get") else None


class BedrockRecording(BodyRecording):
    """The handlers registered on one client; ``attempts`` and ``failures`` as for httpx."""

    def __init__(self, trace: Any, background: bool = True) -> None:
        super().__init__(trace, _broken_errors(), background)

    def remember_settings(self, params: dict[str, Any], context: dict[str, Any],
                          **_: Any) -> None:
        context["tracestore_settings"] = {
            "endpoint": "converse-stream",
            **{k: v for k, v in params.items() if k not in _CONTENT_PARAMS}}
        context["tracestore_prompt"] = {k: params[k] for k in ("messages", "system")
                                        if k in params}

    def wrap_stream(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        stream = parsed.get("stream") if isinstance(parsed, dict) else None
        raw = getattr(stream, "_raw_stream", None)
        if stream is None or raw is None:  # an error response: nothing streamed
            return
        settings = context.get("tracestore_settings", {"endpoint": "converse-stream"})
        said = context.get("tracestore_prompt") or {}

        def with_prompt() -> dict[str, Any]:
            """The settings, and the prompt when the attempt's recorder keeps prompts (read
            by the writer once the attempt's trace is known)."""
            recorder = attempt.handle.trace.recorder
            if not recorder.record_prompts:
                return settings
            from tracestore.recording.prompts import kept_prompt

            return {**settings, **kept_prompt(said, recorder.secret_fields)}

        attempt = self.track(BodyAttempt(self, "bedrock-converse-stream", "aws-eventstream",
                                         with_prompt, _raw_size(raw)))
        stream._raw_stream = BodyRecordingBody(raw, attempt)


def record_bedrock(client: Any, trace: Any, *, background: bool = True) -> BedrockRecording:
    """Record every ``converse_stream`` call of ``client`` into ``trace`` (a TraceRecorder);
    ``background`` as for ``RecordingTransport`` (call ``recording.flush()`` to wait)."""
    recording = BedrockRecording(trace, background)
    events = client.meta.events
    events.register(f"before-parameter-build.{_EVENT}", recording.remember_settings)
    events.register(f"after-call.{_EVENT}", recording.wrap_stream)
    return recording


__all__ = ["BedrockRecording", "record_bedrock"]
