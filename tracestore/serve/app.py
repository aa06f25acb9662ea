"""The reviewer's desk: a Starlette app over one store (``tracestore serve``).

Pages are the report's templates (``tracestore.report``, one set for the file and the
desk): the queue index (``listing``), a trace (``report.model.build_report``), a stretch
of an attempt's events with their native JSON.  Review forms post to ``/review/ATTEMPT``;
each post is planned by ``review.plan_review`` inside the append transaction, against the
reviewer registry as that transaction sees it -- exactly what ``tracestore review
--set/--approve`` appends, with the same refusals.  Every failure is a page with its
stable error code, never a traceback.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Final

from tracestore.errors import InputError, NotFound, ReviewError, StoreError, TracestoreError
from tracestore.serve import pages
from tracestore.serve.security import Guard, allowed_hosts

LOG: Final = logging.getLogger("tracestore.serve")
BANNER_EVERY_S: Final = 1.0
#: A store whose head did not move is verified again this often (a change behind the
#: log's back does not move its head).
REVERIFY_EVERY_S: Final = 60.0
#: HTTP status per error class (the CLI's exit codes, as a browser reads them).
_STATUS: Final = ((NotFound, 404), (ReviewError, 409), (InputError, 400), (StoreError, 503))


@dataclass
class DeskConfig:
    db: str | None = None
    reviewer: str | None = None
    "Who amends and approves at this desk (None, and no key: the desk only reads)."
    key: Any = None
    "The reviewer's Ed25519 private key, when the store uses reviewer keys."
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    "Required for a non-loopback host (``--allow-remote --token``)."
    template: str = "trace-review"
    check_hosts: bool = True


@dataclass(frozen=True)
class Standing:
    """Who a post at this desk is recorded as, judged against the store's reviewer registry
    as the review CLI judges it (``review.plan_review``): the page never names anyone a
    post would not be recorded as, and never shows a form the store would refuse."""

    reviewer: str | None
    "The name a post is recorded as (with a key: its registered name); None: no post can be."
    signed: bool = False
    "Posts are signed with the desk's key."
    read_only: str = "read only: start the desk with --reviewer NAME or --key FILE"
    "What the header says when ``reviewer`` is None."
    problem: str | None = None
    "Why a desk started to record reviews cannot (a banner on every page, a line at start)."


@dataclass
class PageContext:
    """What the layout shows on every desk page (``desk`` in the templates)."""

    reviewer: str | None
    "Who a post is recorded as (``Standing.reviewer``); None: the desk shows no form."
    key_id: str | None
    database: str
    banner: str | None
    notice: str | None
    csrf: str
    only: list[str] = field(default_factory=list)
    "The per-attempt view's attempt (the review forms post back to it)."
    signed: bool = False
    read_only: str = ""
    problem: str | None = None
    "Why this desk cannot record the reviews it was started to record (a banner)."


class Desk:
    """The store and what every page shows about it (reviewer, database, verify banner)."""

    def __init__(self, config: DeskConfig, store: Any) -> None:
        import tracestore
        from tracestore.store.engine_names import database_name
        from tracestore.review import load_template

        self.config, self.store = config, store
        self.version = tracestore.__version__
        self.database = database_name(config.db)
        self.template = load_template(config.template)
        self.key_id = None
        if config.key is not None:
            from tracestore.review.signing import key_id

            self.key_id = key_id(config.key)
        self._verified: tuple[int, str | None] | None = None
        self._looked = self._verified_at = self._synced = 0.0
        self._verifying = threading.Event()
        self._standing: tuple[int, Standing] | None = None
        self._standing_looked = 0.0
        self.guard: Guard | None = None

    def standing(self) -> Standing:
        """Who a post is recorded as, as the log stands (a key registered, or unsigned
        reviews allowed, while the desk runs changes it): judged again when the log's
        head moved, looked at no more than once a second and after each of the desk's
        own appends."""
        now = time.monotonic()
        if self._standing is not None and now - self._standing_looked < BANNER_EVERY_S:
            return self._standing[1]
        self._standing_looked = now
        head = self.store.head_position()
        if self._standing is None or self._standing[0] != head:
            self._standing = (head, self._judge_standing())
        return self._standing[1]

    def _judge_standing(self) -> Standing:
        from tracestore.review.signing import (
            KEY_ENV, REVIEWERS_STREAM, SETTINGS_STREAM, registry_of, signer_name,
        )

        reviewer, key = self.config.reviewer, self.config.key
        if reviewer is None and key is None:
            return Standing(None)
        registry = registry_of([*self.store.read(stream=REVIEWERS_STREAM),
                                *self.store.read(stream=SETTINGS_STREAM)])
        if key is not None:
            try:
                return Standing(signer_name(registry, key, reviewer), signed=True)
            except ReviewError as exc:
                return Standing(None, signed=True,
                                read_only=f"read only: this desk's key cannot sign "
                                          f"[{exc.code}]",
                                problem=f"this desk cannot record reviews: {exc.message} "
                                        f"[{exc.code}]")
        if not registry.unsigned_allowed:
            return Standing(None, read_only="read only: this store requires signed reviews "
                                            "[signature_required]",
                            problem=f"this desk cannot record reviews as {reviewer}: the "
                                    "store has registered reviewer keys, so an unsigned "
                                    "review is refused (signature_required). Start the desk "
                                    f"with --key FILE (or ${KEY_ENV}); unsigned reviews "
                                    "need `tracestore reviewer unsigned allow`")
        return Standing(reviewer)

    def banner(self) -> str | None:
        """A store that fails ``verify`` says so on every page.  The first page waits for
        the check (``tracestore serve`` runs it before binding); when the log's head moves
        (looked at no more than once a second), or a minute after the last check, it runs
        again in a thread, and pages show
        the last result meanwhile: a whole-store verify takes seconds at 100k attempts."""
        if self._verified is None:
            head = self.store.head_position()
            self._verified = (head, self._verify())
            self._looked = self._verified_at = time.monotonic()
            return self._verified[1]
        now = time.monotonic()
        if now - self._looked >= BANNER_EVERY_S and not self._verifying.is_set():
            self._looked = now
            head = self.store.head_position()
            if head != self._verified[0] or now - self._verified_at >= REVERIFY_EVERY_S:
                self._verified_at = now
                self._verifying.set()
                threading.Thread(target=self._reverify, args=(head,), daemon=True).start()
        return self._verified[1]

    def _reverify(self, head: int) -> None:
        try:
            self._verified = (head, self._verify())
        finally:
            self._verifying.clear()

    def index_needs_sync(self) -> bool:
        """Whether to bring the queue index up to the log's head before this page (one
        statement when nothing changed): at most once a second, and always after the desk
        appended; appends by other processes show within a second."""
        now = time.monotonic()
        if now - self._synced < BANNER_EVERY_S:
            return False
        self._synced = now
        return True

    def appended(self) -> None:
        """The desk appended: look at the head again on the next page."""
        self._looked = self._synced = self._standing_looked = 0.0

    def _verify(self) -> str | None:
        try:
            # One pass: worker processes forked from the desk's threaded server could
            # inherit a lock another thread holds.
            result = self.store.verify(jobs=1)
        except TracestoreError as exc:
            return f"tracestore verify fails on {self.database}: [{exc.code}] {exc.message}"
        if result.ok:
            return None
        where = (f" at position {result.first_broken_position}"
                 if result.first_broken_position is not None else "")
        return (f"tracestore verify fails on {self.database}{where}: {result.reason}. "
                "What this desk shows may not be what was recorded.")

    def context(self, request: Any, notice: str | None = None, *,
                banner: bool = True) -> PageContext:
        """``banner=False``: the store itself failed; nothing is read from it."""
        standing = (self.standing() if banner else
                    Standing(None, read_only="read only: the database cannot be read"))
        return PageContext(standing.reviewer, self.key_id, self.database,
                           self.banner() if banner else None, notice,
                           request.scope.get("state", {}).get("csrf", ""),
                           signed=standing.signed, read_only=standing.read_only,
                           problem=standing.problem)

    def amend(self, template: Any, attempt_id: str, trace_id: str, *,
              sets: list[tuple[str, str]], approve: bool, evidence: list[int],
              expect_digest: str | None, override_reason: str | None) -> tuple[int, ...]:
        """Append one reviewer action as ``tracestore review`` does (same plan, same
        checks inside the transaction, same registry)."""
        from tracestore.review import plan_review
        from tracestore.review.signing import REVIEWERS_STREAM, SETTINGS_STREAM, registry_of

        def build(view: Any) -> tuple[list[Any], list[bytes]]:
            events = view.read(trace_id=trace_id)
            registry = registry_of([*view.read(stream=REVIEWERS_STREAM),
                                    *view.read(stream=SETTINGS_STREAM)])
            return plan_review(template, events, attempt_id, sets=sets, approve=approve,
                               reviewer=self.config.reviewer, evidence=evidence,
                               expect_digest=expect_digest, override_reason=override_reason,
                               registry=registry, key=self.config.key), []

        try:
            return tuple(self.store.append_with(build).positions)
        finally:
            self.appended()


def desk_app(config: DeskConfig, store: Any) -> Any:
    """The ASGI app: Starlette routes inside the ``Guard`` (host, token, CSRF, headers)."""
    from functools import partial

    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    desk = Desk(config, store)

    async def http_error(request: Any, exc: HTTPException) -> Any:
        return pages.error(desk, request, exc)

    async def any_error(request: Any, exc: Exception) -> Any:
        if not isinstance(exc, TracestoreError):
            LOG.exception("desk page failed: %s %s", request.method, request.url.path)
        return pages.error(desk, request, exc)

    routes = [
        Route("/", partial(pages.index, desk), methods=["GET"]),
        Route("/static/report.css", pages.stylesheet, methods=["GET"]),
        Route("/reviewers", partial(pages.reviewers, desk), methods=["GET"]),
        Route("/trace/{trace_id:path}", partial(pages.trace, desk), methods=["GET"]),
        Route("/attempt/{attempt_id:path}", partial(pages.attempt, desk), methods=["GET"]),
        Route("/events/{attempt_id:path}", partial(pages.events, desk), methods=["GET"]),
        Route("/review/{attempt_id:path}", partial(pages.review, desk), methods=["POST"]),
    ]
    handlers: dict[Any, Any] = {  # Starlette types each handler by its exception class
        HTTPException: http_error, Exception: any_error, TracestoreError: any_error}
    app = Starlette(routes=routes, exception_handlers=handlers)
    hosts = (allowed_hosts(config.host, config.port)
             if config.check_hosts and config.token is None else None)
    guard = Guard(app, secret=secrets.token_bytes(32), hosts=hosts, token=config.token)
    desk.guard = guard
    guard.desk = desk  # type: ignore[attr-defined]
    return guard


def status_of(exc: BaseException) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return getattr(exc, "status_code", 500)
