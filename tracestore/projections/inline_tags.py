"""Inline reasoning tags in answer text (``<think>`` …), found across delta boundaries.

Some models write their reasoning into the text channel (qwen3 through Ollama's
``/api/generate``).  The normalizer keeps that text as text; the release profile decides
(``Profile.inline_reasoning_tags_allowed``).  A tag may be split over deltas ("<thi",
"nk>"), so the scanner keeps a short tail of each block's text.
"""

from __future__ import annotations

import re
from typing import Final

from tracestore.projections.profiles import INLINE_REASONING_TAGS

#: An inline reasoning tag, opening or closing (``<think>``, ``</ thinking >`` …).
INLINE_TAG: Final = re.compile(r"<\s*/?\s*(?:" + "|".join(INLINE_REASONING_TAGS) + r")\s*>",
                               re.IGNORECASE)
#: How much of a block's earlier text is kept to find a tag split across deltas (longer
#: than any tag with generous inner spaces).
TAIL_CHARS: Final = 24


class InlineTagScanner:
    """Feed each text delta; the first tag found is returned once, then nothing."""

    def __init__(self) -> None:
        self._tails: dict[int | None, str] = {}
        self.found = False

    def feed(self, block: int | None, text: str) -> str | None:
        if self.found:
            return None
        window = self._tails.get(block, "") + text
        match = INLINE_TAG.search(window)
        if match is None:
            self._tails[block] = window[-TAIL_CHARS:]
            return None
        self.found = True
        return match.group(0)
