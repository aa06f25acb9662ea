"""The URL rule for links a model wrote (seed 004): data checks only, never a fetch.

A link passes when it is printable text without whitespace, parses, uses ``https``, carries
no credentials, and its host is EXACTLY on the allowlist.  ``urlsplit`` does the parsing
because prefix checks are fooled: ``https://allowed.example.evil.test/`` is another host,
and in ``https://allowed.example@evil.test/`` the allowed name is a user name.  As
seed 004's exercise decides: a port is not part of the host (allowed), the scheme and host
are compared lower-cased (``HTTPS://`` is allowed), and a trailing dot makes a different
string (refused — the safe default).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit


def check_url(url: object, hosts: Iterable[str]) -> str | None:
    """None when ``url`` passes, else one sentence saying why not."""
    if not isinstance(url, str) or not url:
        return "empty, or not text"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "has whitespace or control characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - an out-of-range or non-numeric port raises here
    except ValueError:
        return "not a valid URL"
    if parts.scheme != "https":
        return f"scheme {parts.scheme or '(none)'!r} is not https"
    if parts.username is not None or parts.password is not None:
        return "credentials in the URL"
    allowed = {h.lower() for h in hosts}
    return None if host in allowed else f"host {host!r} is not allowed"
