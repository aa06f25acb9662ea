"""One entry of the error-code registry: ``ErrorCode``, and ``_code`` that the area modules
declare their codes with.  Its own module so that the area modules and the registry
(``__init__``) can all import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorCode:
    code: str
    exit_code: int | None
    meaning: str
    aliases: tuple[str, ...] = ()


def _code(code: str, exit_code: int | None, meaning: str,
          aliases: tuple[str, ...] = ()) -> ErrorCode:
    return ErrorCode(code, exit_code, meaning, aliases)
