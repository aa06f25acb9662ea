"""OpenAI Realtime server events → observations (OpenAI, Azure OpenAI, Azure Voice Live and
xAI realtime sessions speak this one protocol family).

One normalizer reads both event vocabularies: the GA names (``response.output_text.delta``,
``response.output_audio_transcript.delta``, ``response.output_audio.delta``) and the beta
names (``response.text.delta``, ``response.audio_transcript.delta``, ``response.audio.delta``)
that Azure and older ``gpt-4o-realtime-preview`` sessions still send.

A spoken answer's text is its transcript: the transcript deltas are the answer's text and
the audio deltas stay ``raw`` (their base64 bytes are in the native payload and the stored
capture).  ``response.done`` is the one terminal; its ``response.status`` (completed,
cancelled, incomplete, failed) is kept as sent and ``status_details.reason`` is the stop
reason.

Why it is stateful: a session's ``error`` event fails the response in flight (between
``response.created`` and ``response.done``), but the same event outside a response refused
a client event (an item the server would not add, a bad ``session.update``) and says nothing
about any answer; that one is kept ``raw`` with its code and message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracestore.providers.base import Normalizer, as_int, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

#: Text of the answer: GA and beta names of the text and transcript deltas.
TEXT_DELTAS = frozenset({
    "response.output_text.delta", "response.text.delta",
    "response.output_audio_transcript.delta", "response.audio_transcript.delta",
})
#: The whole text of one content part, repeated at its end (agreement checks only).
TEXT_DONES = {
    "response.output_text.done": "text", "response.text.done": "text",
    "response.output_audio_transcript.done": "transcript",
    "response.audio_transcript.done": "transcript",
}
#: Audio chunks: kept as bytes (the native payload), never text.
AUDIO_TYPES = frozenset({
    "response.output_audio.delta", "response.audio.delta",
    "response.output_audio.done", "response.audio.done",
})
#: Known response events that carry nothing a projection needs beyond the native itself.
RAW_RESPONSE_TYPES = frozenset({
    "response.content_part.added", "response.content_part.done",
})
RAW_RESPONSE_PREFIXES = ("response.mcp_call",)
#: Session-level notices: the session, the conversation's items, the input and output audio
#: buffers, rate limits, MCP tool listing, xAI's keepalive ``ping``.
SESSION_PREFIXES = (
    "session.", "conversation.", "input_audio_buffer.", "output_audio_buffer.",
    "rate_limits.", "transcription_session.", "mcp_list_tools.",
)
SESSION_TYPES = frozenset({"ping"})

#: Output item types that are tool calls.
TOOL_ITEM_TYPES = frozenset({"function_call", "mcp_call"})

#: Client events that stop the answer being delivered: cancelling the response, or cutting
#: the assistant's audio item short where the user barged in.
CLIENT_STOPS = frozenset({"response.cancel", "conversation.item.truncate"})


def client_stop(native: Any) -> str | None:
    """The client event's type when it is a local Stop, else None."""
    etype = native.get("type") if is_map(native) else None
    return etype if isinstance(etype, str) and etype in CLIENT_STOPS else None


def response_id(native: Any) -> str | None:
    """The response id a ``response.*`` server event names, when it names one."""
    if not is_map(native):
        return None
    response = as_map(native.get("response"))
    if response is not None and as_str(response.get("id")):
        return as_str(response.get("id"))
    return as_str(native.get("response_id"))


class OpenAIRealtimeNormalizer(Normalizer):
    """Normalizer for ``openai-realtime`` (see the module docstring)."""

    def __init__(self) -> None:
        self.in_flight = False
        "A response was created and has not ended: an ``error`` now is its failure."

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        etype = as_str(native.get("type"))
        if etype is None:
            return unknown(event_name or "<untyped>")
        block = as_int(native.get("output_index"))
        if etype in TEXT_DELTAS:
            return [Observation("text_delta", etype, block=block, text=as_str(native.get("delta")))]
        if etype in AUDIO_TYPES:
            return [Observation("raw", etype, block=block, block_type="audio")]
        if etype in TEXT_DONES:
            return [Observation("final_text", etype, block=block,
                                text=as_str(native.get(TEXT_DONES[etype])))]
        if etype == "response.created":
            self.in_flight = True
            return [Observation("message_start", etype)]
        if etype == "response.done":
            self.in_flight = False
            return self._done(etype, native)
        if etype == "error":
            return [self._error(etype, native)]
        if etype == "response.output_item.added":
            return [self._item(etype, native, block, start=True)]
        if etype == "response.output_item.done":
            return [self._item(etype, native, block, start=False)]
        if etype == "response.function_call_arguments.delta":
            return [Observation("tool_call_delta", etype, block=block,
                                tool_call_id=as_str(native.get("call_id")),
                                arguments=as_str(native.get("delta")))]
        if etype == "response.function_call_arguments.done":
            return [Observation("tool_call_done", etype, block=block,
                                tool_call_id=as_str(native.get("call_id")),
                                tool_name=as_str(native.get("name")),
                                arguments=as_str(native.get("arguments")))]
        if (etype in RAW_RESPONSE_TYPES or etype.startswith(RAW_RESPONSE_PREFIXES)
                or etype in SESSION_TYPES or etype.startswith(SESSION_PREFIXES)):
            return [Observation("raw", etype, block=block)]
        return unknown(etype, block=block)

    def _error(self, etype: str, native: Mapping[str, Any]) -> Observation:
        err = as_map(native.get("error")) or native
        code = as_str(err.get("code")) or as_str(err.get("type"))
        message = as_str(err.get("message"))
        if not self.in_flight:  # a refused client event, not a failed answer
            return Observation("raw", etype, error_code=code, message=message)
        return Observation("error", etype, error_code=code, message=message)

    @staticmethod
    def _item(etype: str, native: Mapping[str, Any], block: int | None, *,
              start: bool) -> Observation:
        item = as_map(native.get("item")) or {}
        itype = as_str(item.get("type"))
        if itype in TOOL_ITEM_TYPES:
            call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
            return Observation("tool_call_start" if start else "block_stop", etype, block=block,
                               block_type="tool_use", tool_call_id=call_id,
                               tool_name=as_str(item.get("name")))
        btype = "text" if itype == "message" else itype
        return Observation("block_start" if start else "block_stop", etype, block=block,
                           block_type=btype)

    @staticmethod
    def _done(etype: str, native: Mapping[str, Any]) -> list[Observation]:
        response = as_map(native.get("response")) or {}
        out: list[Observation] = []
        usage = as_map(response.get("usage"))
        if usage is not None:
            out.append(Observation("usage", etype, usage=usage))
        details = as_map(response.get("status_details")) or {}
        error = as_map(details.get("error")) or {}
        out.append(Observation(
            "terminal", etype, status=as_str(response.get("status")),
            stop_reason=as_str(details.get("reason")),
            error_code=as_str(error.get("code")) or as_str(error.get("type")),
            message=as_str(error.get("message"))))
        return out


register("openai-realtime")(OpenAIRealtimeNormalizer)
