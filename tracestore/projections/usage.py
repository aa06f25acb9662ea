"""Usage accounting per provider: how the usage records of one stream combine.

Providers report usage differently, and reading them the same way either loses counts or
double-counts them (seed 002):

* Anthropic Messages (and xAI's Messages surface) send ``message_start.message.usage``
  (input and cache counts, an initial output count) and then ``message_delta.usage``
  whose counts are CUMULATIVE: the attempt's usage is the merge start ⊕ delta, later
  keys winning, so input counts are not lost when the delta arrives.
* Gemini generateContent repeats running totals on every chunk: cumulative, the last
  record is authoritative (merging would keep keys a later total no longer reports).
* The others send one final record (Bedrock ``metadata``, OpenAI/xAI Responses
  ``response.usage`` on the terminal, Chat's usage chunk, Ollama's ``done`` line, Gemini
  Interactions' ``interaction.completed``).

Absent usage stays absent (``None``): nothing here invents a zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: Native event types whose usage records merge (Anthropic Messages' start and delta).
MERGED_TYPES: Final = frozenset({"message_start", "message_delta"})
#: APIs whose streams may carry the Anthropic start/delta pair.
MERGING_APIS: Final = frozenset({"anthropic-messages", "xai"})

#: How each API's usage records are read, in the words the review record uses.
USAGE_BASIS: Final[dict[str, str]] = {
    "anthropic-messages": "merged message_start ⊕ message_delta; message_delta counts are "
                          "cumulative, not increments",
    "xai": "per surface: chat usage chunk and Responses response.usage are final records; "
           "Messages merge message_start ⊕ message_delta (cumulative)",
    "gemini": "cumulative running totals on every chunk; the last record is authoritative "
              "(Interactions: one final record on interaction.completed)",
    "bedrock-converse-stream": "one final record (metadata.usage)",
    "openai-responses": "one final record (response.usage on the terminal event)",
    "openai-chat": "one final record (the usage chunk, or the finish chunk)",
    "ollama": "one final record (the counters on the done line)",
    "cohere-v2": "one final record (message-end's delta.usage: billed_units and tokens)",
    "app-frames": "application frames carry no usage",
}


def merge_usage(api: str, previous: Mapping[str, Any] | None, previous_type: str | None,
                native_type: str, usage: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The attempt's usage after one more record, and whether it was merged (not replaced)."""
    if (api in MERGING_APIS and previous is not None and native_type == "message_delta"
            and previous_type in MERGED_TYPES):
        return {**previous, **usage}, True
    return usage, False


def usage_basis(api: str) -> str:
    return USAGE_BASIS.get(api, "usage reading not described for this API")
