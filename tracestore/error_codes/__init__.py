"""The one registry of error codes: every code tracestore raises or writes in a JSON error.

Each ``ErrorCode`` has its stable ``code`` (what scripts match on), the ``exit_code`` of the
CLI when it ends a command (``None``: an HTTP error body of ``tracestore proxy``), one
sentence saying what it means, and the ``aliases`` it replaced: old names of the same
meaning, still written in JSON errors (``"aliases": [...]``) for one release so scripts
that matched them keep a way to match.  Release reasons (``projections/reasons.py``,
docs/release-policy.md) are a different vocabulary and are not here.

The codes are declared by area, one module each (``inputs``: what a command is given;
``store``: the store and what reads or writes it; ``review``: review records; ``servers``:
the proxy and the desk), so no file holds them all; every one is imported here, so the
registry stays one import for its users (``error_codes.ATTEMPT_NOT_FOUND``,
``error_codes.CODES``).  ``ErrorCode`` itself lives in ``entry``.

tests/test_error_codes.py reads the source (``ast``) for every code raised or written in a
JSON error and fails on one that is not registered, and checks docs/errors.md against
``markdown_table()`` (regenerate with ``python -m tracestore.error_codes``).
"""

from __future__ import annotations

from typing import Final

from tracestore.error_codes.entry import ErrorCode
from tracestore.error_codes.inputs import *  # noqa: F403
from tracestore.error_codes.store import *  # noqa: F403
from tracestore.error_codes.review import *  # noqa: F403
from tracestore.error_codes.servers import *  # noqa: F403


#: Every registered code by name.
CODES: Final[dict[str, ErrorCode]] = {
    value.code: value for value in list(globals().values()) if isinstance(value, ErrorCode)}
#: An old name → the code that replaced it.
ALIASES: Final[dict[str, str]] = {
    alias: entry.code for entry in CODES.values() for alias in entry.aliases}


def lookup(code: str) -> ErrorCode | None:
    """The registered code ``code`` names (an alias names its replacement), else None."""
    return CODES.get(ALIASES.get(code, code))


def aliases_of(code: str) -> tuple[str, ...]:
    """The old names still written beside ``code`` in JSON errors (empty for most)."""
    entry = CODES.get(code)
    return entry.aliases if entry is not None else ()


def markdown_table() -> str:
    """The table docs/errors.md holds between its markers (sorted by code)."""
    lines = ["| code | exit | meaning | aliases (one release) |", "|---|---|---|---|"]
    for entry in sorted(CODES.values(), key=lambda e: e.code):
        exit_code = "HTTP" if entry.exit_code is None else str(entry.exit_code)
        aliases = ", ".join(f"`{a}`" for a in entry.aliases)
        lines.append(f"| `{entry.code}` | {exit_code} | {entry.meaning} | {aliases} |")
    return "\n".join(lines) + "\n"
