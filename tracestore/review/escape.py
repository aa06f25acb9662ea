"""Escaping untrusted text (model text, native strings, reviewer values) for a record.

A record is read in three places — rendered Markdown (GitHub, an editor preview), the raw
Markdown in a terminal, and JSON in scripts — and untrusted text must be inert in each:

Markdown table cells (``md_cell``), decided rules:

* ``&``, ``<``, ``>`` become ``&amp;``, ``&lt;``, ``&gt;``: no HTML (``<script>``, ``<img>``)
  and no autolinks ever render, and ``&lt;`` typed by a model stays literal text.
* A line break (``\\n``, ``\\r\\n``) becomes ``<br>``, so a value never leaves its row.
* ``\\``, ``|``, `````, ``*``, ``~``, ``[``, ``]`` and ``$`` get a backslash: no cell split,
  no code span, emphasis, strikethrough (which would change what a value *says*), link,
  image or math.  ``_`` is escaped too, except between two letters/digits where
  CommonMark cannot read it as emphasis — so ``end_turn`` stays readable in the raw file.
* Every other control character (C0 incl. tab and lone CR, DEL, C1), the bidi
  controls that make text read differently from its bytes, U+2028/U+2029 and lone
  surrogates -- the one set of ``tracestore.text.neutralize`` -- become visible ``\\xNN`` /
  ``\\uNNNN`` text; nothing is silently removed.
* Not escaped: ``#``, ``>`` block quotes, list markers and the like — a table cell holds
  inline content only, so they cannot start a block there; bare URLs that GitHub
  linkifies (``www.example.com``) stay text a reader can see before clicking.

JSON (``json_text``, used by every ``--json`` output of the CLI): ``json`` escapes C0
controls itself; DEL, C1 (including the 8-bit CSI U+009B), bidi overrides, U+2028/U+2029
(which split "lines" for some readers) and lone UTF-16 surrogates (which cannot be written
as UTF-8 at all) -- all of which ``ensure_ascii=False`` would pass through raw -- are
written as ``\\uNNNN``.
Terminals: the CLI prints records through ``cli.common.safe_text``, not through Rich
markup, so ANSI escapes and ``[bold]`` are shown, never obeyed.
"""

from __future__ import annotations

import json
from typing import Any, Final

from tracestore.text.neutralize import UNSAFE as _CONTROL
from tracestore.text.neutralize import json_escaped, visible_control

_BACKSLASHED: Final = frozenset("\\|`*~[]$")
_ENTITIES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _underscore(text: str, i: int) -> str:
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    return "_" if before.isalnum() and after.isalnum() else "\\_"


def md_cell(value: Any) -> str:
    """Untrusted text as one inert GitHub-Markdown table cell (rules in the module doc)."""
    text = str(value).replace("\r\n", "\n")
    out: list[str] = []
    for i, char in enumerate(text):
        if char == "\n":
            out.append("<br>")
        elif char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _BACKSLASHED:
            out.append("\\" + char)
        elif char == "_":
            out.append(_underscore(text, i))
        elif _CONTROL.match(char):
            out.append(visible_control(char))
        else:
            out.append(char)
    return "".join(out)


def json_text(value: Any, *, indent: int | None = 2, compact: bool = False,
              default: Any = None) -> str:
    """JSON with non-ASCII kept readable but every invisible control escaped.

    Safe to replace after dumping: these characters can only occur inside JSON strings,
    where ``\\uNNNN`` means the same character.  ``compact`` writes one line without
    spaces (JSON lines); ``default`` is passed to ``json.dumps``.
    """
    separators = (",", ":") if compact else None
    text = json.dumps(value, ensure_ascii=False, indent=None if compact else indent,
                      separators=separators, default=default)
    return json_escaped(text)
