"""Secrets never printed: passwords masked in every error and log line.

A database URL's password (``postgresql://alice:S3cretPw@host/db``) reached stderr through a
driver message on one path.  Every line tracestore prints about an error goes through
``mask_secrets`` (``cli.common.report_error`` and the last-resort handler in ``cli.main``),
and the store's own messages name URLs by ``masked_url``: one choke point for what is
printed, one spelling for URLs.  Pure text rules, no imports:

* ``scheme://user:PASSWORD@host`` → ``scheme://user:***@host`` (any scheme);
* libpq keyword strings ``password=PASSWORD`` / ``password='…'`` → ``password=***``.
"""

from __future__ import annotations

import re
from typing import Any, Final

_URL_PASSWORD: Final = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)[^@\s]*@")
_KEYWORD_PASSWORD: Final = re.compile(r"(?i)(?P<head>\bpassword\s*=\s*)('[^']*'|\S+)")
MASK: Final = "***"


def mask_secrets(text: str) -> str:
    """``text`` with every URL password and ``password=`` value replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}@", text)
    return _KEYWORD_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}", text)


def masked_url(url: Any) -> str:
    """A database URL as it may be shown: its password (if any) as ``***``."""
    return mask_secrets(str(url))


def mask_context(value: Any) -> Any:
    """Structured error context with every string masked (JSON error output)."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {k: mask_context(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_context(v) for v in value]
    return value
