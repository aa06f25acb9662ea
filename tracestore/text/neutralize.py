"""The one neutralizer for untrusted text in every output.

Model text, native strings, ids and reviewer values reach a terminal, Markdown, an HTML page
and JSON lines.  In each of them the same characters are made inert -- one pattern,
``UNSAFE``:

* C0 controls except line feed (tab included; callers may keep it): NUL, ESC (ANSI
  sequences), BEL, backspace, lone CR;
* DEL and the C1 controls, including the 8-bit CSI U+009B and NEL U+0085;
* U+2028 / U+2029 (line and paragraph separators: they split "lines" for some readers);
* the bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and the bidi
  marks (U+200E, U+200F, U+061C), which make text read differently from its bytes;
* lone UTF-16 surrogates, which cannot even be written as UTF-8.

Two renderings of the same set: ``visible`` (terminal, Markdown, HTML) writes ``\\xNN`` /
``\\uNNNN`` *text* a person sees, nothing silently removed; ``json_escaped`` writes the JSON
escape ``\\uNNNN``, which a JSON reader decodes to exactly the original character.
Pure and dependency-free: imported by the CLI, the review records and the report.
"""

from __future__ import annotations

import re
from typing import Final

UNSAFE: Final = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]")


def visible_control(char: str) -> str:
    """``\\x1b`` for a C0/C1 control, ``\\u202e`` for the others."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep: str = "\n") -> str:
    """``text`` with every unsafe character (but those in ``keep``) shown as an escape."""
    return UNSAFE.sub(lambda m: m.group() if m.group() in keep else visible_control(m.group()),
                      text)


def json_escaped(dumped: str) -> str:
    """JSON text (from ``json.dumps(ensure_ascii=False)``) with every unsafe character that
    ``json`` leaves raw written as its ``\\uNNNN`` escape (they only occur inside strings,
    where the escape means the same character)."""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


def is_clean(text: str, *, keep: str = "\n") -> bool:
    """No unsafe character but those in ``keep`` (tests and checks use it)."""
    return all(m.group() in keep for m in UNSAFE.finditer(text))
