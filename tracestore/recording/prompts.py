"""What a recording keeps of a request's prompt when its recorder opts in
(``Recorder(record_prompts=True)``, ``tracestore proxy --record-prompts``).

By default the SDK transports, the process writer and the proxy keep a request's settings
and never what was said: a prompt holds the user's words and whatever the application put
around them, and a trace store is kept, copied and exported long after the answer.  With
the opt-in, ``kept_prompt`` adds the request's prompt fields (``PROMPT_FIELDS``: OpenAI
Chat ``messages``, Responses ``input``/``instructions``, Anthropic ``messages``/``system``,
Gemini ``contents``/``systemInstruction``, Bedrock ``messages``/``system``) to the settings
recorded in ``attempt.started``:

* every credential is replaced first (``tracestore.text.redaction.redact``, the one
  redactor), so a cut can never leave part of a key behind;
* at most ``PROMPT_BYTES`` of it (compact JSON) are kept.  A longer prompt keeps its
  system text up to a quarter of that, then its conversation's newest items whole (the
  question being answered comes last), dropping the oldest; a text longer than what is
  left is cut at its end; and the request says so:
  ``"prompt_cut": {"type": "prompt_cut", "limit_bytes": …, "prompt_bytes": …}`` (the size
  of the whole prompt, after redaction).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

#: Request fields that hold what was said, kept with the opt-in.
PROMPT_FIELDS: Final = frozenset({
    "messages", "input", "instructions", "system", "contents", "systemInstruction",
    "system_instruction"})

#: Most bytes (compact JSON, UTF-8) of a request's prompt one attempt keeps.
PROMPT_BYTES: Final = 64 * 1024

#: The request key naming a prompt that was cut, and its marker's ``type``.
CUT_KEY: Final = "prompt_cut"

#: The conversation; the other prompt fields are the system text around it.
_CONVERSATION: Final = ("messages", "input", "contents")

#: A container stops taking items once less than this is left for the next.
_SMALLEST: Final = 16


def kept_prompt(body: Mapping[str, Any], fields: frozenset[str] | None = None,
                limit: int = PROMPT_BYTES) -> dict[str, Any]:
    """The prompt fields of the request ``body``, redacted and bounded (module doc), plus
    the ``prompt_cut`` marker when they were cut; {} when the body has none."""
    from tracestore.text.redaction import SECRET_FIELDS, redact

    said = {key: value for key, value in body.items()
            if key in PROMPT_FIELDS and value is not None}
    if not said:
        return {}
    said = redact(said, SECRET_FIELDS if fields is None else fields)
    size = _size(said)
    if size <= limit:
        return said
    # The system text first, bounded to a quarter, then the conversation in the rest.
    order = [k for k in said if k not in _CONVERSATION] + [k for k in said
                                                          if k in _CONVERSATION]
    kept: dict[str, Any] = {}
    used = 2
    for key in order:
        room = limit - used - _size(key) - 2
        if key not in _CONVERSATION:
            room = min(room, limit // 4)
        if room < _SMALLEST:
            break
        value, n = _fit(said[key], room)
        kept[key] = value
        used += _size(key) + 2 + n
    kept = {key: kept[key] for key in said if key in kept}  # the request's own order
    kept[CUT_KEY] = {"type": CUT_KEY, "limit_bytes": limit, "prompt_bytes": size}
    return kept


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _fit(value: Any, budget: int) -> tuple[Any, int]:
    """``value`` bounded to ``budget`` bytes of compact JSON, and its size."""
    size = _size(value)
    if size <= budget:
        return value, size
    if isinstance(value, str):
        text = value.encode("utf-8")[:max(budget - 2, 0)].decode("utf-8", "ignore")
        while _size(text) > budget and text:
            text = text[:-max(1, (_size(text) - budget) // 6)]  # an escape is at most 6
        return text, _size(text)
    if isinstance(value, list):  # the newest items first: they are what is being answered
        kept: list[Any] = []
        used = 2
        for item in reversed(value):
            room = budget - used - 1
            if room < _SMALLEST:
                break
            fitted, n = _fit(item, room)
            kept.append(fitted)
            used += n + 1
        return kept[::-1], used
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        used = 2
        for key, item in value.items():
            room = budget - used - _size(key) - 2
            if room < _SMALLEST:
                break
            fitted, n = _fit(item, room)
            out[key] = fitted
            used += _size(key) + 2 + n
        return out, used
    return None, 4  # a number longer than what is left


__all__ = ["CUT_KEY", "PROMPT_BYTES", "PROMPT_FIELDS", "kept_prompt"]
