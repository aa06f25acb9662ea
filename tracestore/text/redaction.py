"""Secrets never stored: credentials are taken out of what is recorded of a request.

The proxy, the SDK recorder and its writer process record a request's settings (its JSON
body minus the prompt, the endpoint, the client's User-Agent), its prompt when the recorder
keeps prompts (``recording.prompts``) and a failed transport's message.  Before any of it is written (to the store, or to the writer process's journal),
``redact`` replaces

* the value of every field whose name is a credential's (``api_key``, ``token``,
  ``password`` …: ``SECRET_FIELDS``, compared case-insensitively with ``-`` read as ``_``),
  at any depth, whatever the value is;
* every string shaped like a provider's key (``sk-…``, ``sk-ant-…``, ``AKIA…``, ``AIza…``,
  ``xai-…``, a ``Bearer`` token), wherever it stands in a string;
* a URL's query parameter named like a credential (``?key=…``, ``&access_token=…``)

with ``REDACTED``.  It is pure (data in, data out: the input is never changed) and
idempotent.  The names can be extended, never shortened: ``secret_fields(extra)`` adds the
names given to a recorder (``Recorder(secret_fields=…)``, ``tracestore proxy
--secret-field``) and those in ``$TRACESTORE_SECRET_FIELDS`` (comma-separated).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

REDACTED: Final = "[redacted]"
SECRET_FIELDS_ENV: Final = "TRACESTORE_SECRET_FIELDS"

#: Field names whose values are credentials: in JSON request bodies and as header names.
SECRET_FIELDS: Final = frozenset({
    "api_key", "key", "token", "access_token", "password", "secret", "authorization",
    "client_secret", "x_api_key", "x_goog_api_key", "proxy_authorization", "cookie",
    "set_cookie", "refresh_token", "id_token", "session_token", "private_key"})

#: Provider key shapes: OpenAI (``sk-``, ``sk-proj-``), Anthropic (``sk-ant-``), AWS access
#: key ids (``AKIA``/``ASIA``), Google (``AIza``), xAI (``xai-``), and any Bearer token.
_KEY_SHAPES: Final = re.compile(
    r"\b(?:sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{16,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}|xai-[A-Za-z0-9_\-]{16,})"
    r"|(?P<scheme>(?i:\bbearer\s+))[A-Za-z0-9._~+/=\-]{8,}")


def secret_fields(extra: Iterable[str] = ()) -> frozenset[str]:
    """``SECRET_FIELDS`` plus ``extra`` plus the names in ``$TRACESTORE_SECRET_FIELDS``."""
    named = [*extra, *os.environ.get(SECRET_FIELDS_ENV, "").split(",")]
    return SECRET_FIELDS | {_norm(n) for n in named if n.strip()}


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_")


@functools.lru_cache(maxsize=16)
def _query_pattern(fields: frozenset[str]) -> re.Pattern[str]:
    names = "|".join(sorted((re.escape(f).replace("_", "[_-]") for f in fields),
                            key=len, reverse=True))
    return re.compile(rf"(?i)([?&;](?:{names})=)[^&#;\s\"'<>]*")


def redact_text(text: str, fields: frozenset[str] = SECRET_FIELDS) -> str:
    """``text`` with key shapes and credential query parameters replaced."""
    if "=" in text:
        text = _query_pattern(fields).sub(lambda m: m.group(1) + REDACTED, text)
    return _KEY_SHAPES.sub(lambda m: (m.group("scheme") or "") + REDACTED, text)


def redact(value: Any, fields: frozenset[str] = SECRET_FIELDS) -> Any:
    """A copy of the JSON-like ``value`` with every credential replaced (module doc)."""
    if isinstance(value, str):
        return redact_text(value, fields)
    if isinstance(value, Mapping):
        return {key: REDACTED if isinstance(key, str) and _norm(key) in fields
                and value[key] is not None else redact(value[key], fields)
                for key in value}
    if isinstance(value, (list, tuple)):
        return [redact(item, fields) for item in value]
    return value


#: A quoted field name followed by ``:`` (a JSON member) or a ``\\u`` escape (which can
#: spell any name): a body with neither holds no credential field.
@functools.lru_cache(maxsize=16)
def _member_pattern(fields: frozenset[str]) -> re.Pattern[bytes]:
    names = b"|".join(re.escape(f.encode()).replace(b"_", b"[_-]") for f in sorted(fields))
    return re.compile(rb'(?i)"(?:' + names + rb')"\s*:|\\u')


def redact_body(content: bytes, fields: frozenset[str] = SECRET_FIELDS) -> bytes:
    """A JSON request body with its credentials replaced (``redact``), re-encoded compact;
    returned as it is when it holds none.  A body that is not JSON is returned empty: only a
    JSON body's settings are ever recorded, so nothing of another body needs keeping."""
    text = content.decode("latin-1")
    if not _member_pattern(fields).search(content) and not _KEY_SHAPES.search(text) \
            and "=" not in text:
        return content
    try:
        parsed = json.loads(content)
    except (ValueError, RecursionError):
        return b""
    cleaned = redact(parsed, fields)
    if cleaned == parsed:
        return content
    return json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


__all__ = ["REDACTED", "SECRET_FIELDS", "SECRET_FIELDS_ENV", "redact", "redact_body",
           "redact_text", "secret_fields"]
