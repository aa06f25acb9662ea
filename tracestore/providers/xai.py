"""xAI streams → observations, dispatching on payload shape.

xAI serves three OpenAI/Anthropic-compatible surfaces (chat completions, Responses,
Messages) and a capture does not always say which endpoint produced it.  One instance
therefore owns one delegate per dialect and routes each native by its shape:

* ``[DONE]``, ``object: chat.completion.chunk``, a ``choices`` list or a bare ``error``
  object → the chat normalizer;
* ``type`` starting with ``response.`` → the Responses normalizer;
* Anthropic event types (``message_start`` … ``ping``) and ``type: error`` → the
  Anthropic normalizer (its error reading also accepts the Responses error body).

Known xAI quirks handled by the delegates: chat chunks omit ``finish_reason: null`` and
``usage: null``; a whole tool call arrives in one chunk; the usage chunk has
``choices: []`` and counts reasoning in ``total_tokens``.
"""

from __future__ import annotations

from typing import Any

from tracestore.providers.anthropic import AnthropicMessagesNormalizer
from tracestore.providers.base import Normalizer, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation
from tracestore.providers.openai_chat import DONE_SENTINEL, OpenAIChatNormalizer
from tracestore.providers.openai_responses import OpenAIResponsesNormalizer

ANTHROPIC_TYPES = frozenset({"message_start", "content_block_start", "content_block_delta",
                             "content_block_stop", "message_delta", "message_stop", "ping",
                             "error"})


def dialect_of(native: Any) -> str | None:
    """``chat``, ``responses``, ``anthropic`` or ``None`` for a native payload's shape."""
    if native == DONE_SENTINEL:
        return "chat"
    if not is_map(native):
        return None
    etype = as_str(native.get("type"))
    if native.get("object") == "chat.completion.chunk" or isinstance(native.get("choices"), list):
        return "chat"
    if etype is not None and etype.startswith("response."):
        return "responses"
    if etype in ANTHROPIC_TYPES:
        return "anthropic"
    if etype is None and "error" in native:
        return "chat"
    return None


class XAINormalizer(Normalizer):
    """Normalizer for ``xai``: one delegate per dialect, chosen per native."""

    def __init__(self) -> None:
        self._chat = OpenAIChatNormalizer()
        self._responses = OpenAIResponsesNormalizer()
        self._anthropic = AnthropicMessagesNormalizer()

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        dialect = dialect_of(native)
        if dialect == "chat":
            return self._chat.feed(native, event_name)
        if dialect == "responses":
            return self._responses.feed(native, event_name)
        if dialect == "anthropic":
            return self._anthropic.feed(native, event_name)
        etype = as_str(native.get("type")) if is_map(native) else None
        return unknown(etype or event_name or "<unrecognised-shape>")


register("xai")(XAINormalizer)
