"""The desk's guards, as one ASGI wrapper around the Starlette app.

* **Host**: only the names the desk was started on (127.0.0.1, localhost, ::1 with its
  port) are answered, so a page on another site cannot reach the desk through DNS
  rebinding.  A remote desk (``--allow-remote``) answers any Host, but only with the token.
* **Token** (remote desk only): ``?token=T`` once (then a cookie), ``Authorization:
  Bearer T``, or the cookie; compared in constant time.
* **Session and CSRF**: every browser gets a random session cookie (HttpOnly,
  SameSite=Strict); its CSRF token is an HMAC of the session under the desk's secret.  A
  state-changing request (any method but GET/HEAD) needs that token in its form and an
  ``Origin`` (or ``Referer``) of the desk itself; else 403 and nothing is appended.
* **Headers** on every response: a Content-Security-Policy that allows only the desk's own
  stylesheet and forms (no script at all, no other origin, no framing), nosniff, no
  referrer to other origins, no caching of pages.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

CSP: Final = ("default-src 'self'; script-src 'none'; object-src 'none'; style-src 'self'; "
              "img-src 'self'; font-src 'self'; connect-src 'none'; form-action 'self'; "
              "frame-ancestors 'none'; base-uri 'none'")
HEADERS: Final = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)
SESSION_COOKIE: Final = "tracestore_desk"
TOKEN_COOKIE: Final = "tracestore_desk_token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    names = {host, *LOOPBACK} if is_loopback(host) else {host}
    return frozenset(f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names)


class Guard:
    """``Guard(app, secret=…, hosts=…, token=…)``: the checks above, then ``app``."""

    def __init__(self, app: Any, *, secret: bytes, hosts: Iterable[str] | None,
                 token: str | None = None) -> None:
        self.app, self.secret, self.token = app, secret, token
        self.hosts = None if hosts is None else frozenset(hosts)

    def csrf_for(self, session: str) -> str:
        return hmac.new(self.secret, session.encode(), hashlib.sha256).hexdigest()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        cookies = _cookies(headers.get("cookie", ""))
        host = headers.get("host", "")
        if self.hosts is not None and host not in self.hosts:
            await _plain(send, 421, "this desk answers on " + ", ".join(sorted(self.hosts)))
            return
        set_cookies = []
        if self.token is not None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (cookies.get(TOKEN_COOKIE) or (query.get("token") or [""])[0]
                     or headers.get("authorization", "").removeprefix("Bearer ").strip())
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                await _plain(send, 401, "this desk needs its token: open it with ?token=…")
                return
            if cookies.get(TOKEN_COOKIE) != self.token:
                set_cookies.append(_cookie(TOKEN_COOKIE, self.token))
        session = cookies.get(SESSION_COOKIE, "")
        if len(session) != 43 or not session.replace("-", "").replace("_", "").isalnum():
            session = secrets.token_urlsafe(32)
            set_cookies.append(_cookie(SESSION_COOKIE, session))
        state = scope.setdefault("state", {})
        state["csrf"] = self.csrf_for(session)
        state["forbidden"] = None
        if scope["method"] not in SAFE_METHODS:
            state["forbidden"] = self._refusal(headers, host, scope)
        extra = [(b"set-cookie", c.encode("latin-1")) for c in set_cookies]

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS,
                                                  *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, headers: dict[str, str], host: str, scope: dict[str, Any]) -> str | None:
        """Why a state-changing request is refused before its form is read (None: the
        origin is the desk's; the CSRF token in the form is checked by the endpoint)."""
        scheme = scope.get("scheme", "http")
        own = {f"{scheme}://{h}" for h in (self.hosts or {host})}
        origin = headers.get("origin")
        if origin is not None:
            return None if origin in own else f"a request from another origin ({origin})"
        referer = headers.get("referer")
        if referer is not None:
            parts = urlsplit(referer)
            if f"{parts.scheme}://{parts.netloc}" not in own:
                return "a request from another page's origin"
        return None

    def csrf_ok(self, scope: dict[str, Any], given: str | None) -> bool:
        want = scope.get("state", {}).get("csrf", "")
        return bool(given) and hmac.compare_digest(str(given).encode(), want.encode())


def _cookies(header: str) -> dict[str, str]:
    """``name=value; name=value`` (the desk's own cookies are plain tokens: no quoting)."""
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name in (SESSION_COOKIE, TOKEN_COOKIE):
            out.setdefault(name, value.strip().strip('"'))
    return out


def _cookie(name: str, value: str) -> str:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict"


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": body})
