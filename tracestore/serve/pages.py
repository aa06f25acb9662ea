"""The desk's endpoints: each reads the store, builds a pure model and renders a template
of the report's set (``tracestore.report.html``)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlencode

from tracestore.errors import InputError, NotFound, TracestoreError

if TYPE_CHECKING:
    from tracestore.serve.app import Desk

EVENTS_PAGE: Final = 200
MAX_FORM_BYTES: Final = 64 * 1024
_POSITIONS: Final = re.compile(r"[\s,;]+")


def _html(text: str, status: int = 200) -> Any:
    from starlette.responses import HTMLResponse

    return HTMLResponse(text, status_code=status)


def _see(url: str) -> Any:
    from starlette.responses import RedirectResponse

    return RedirectResponse(url, status_code=303)


def _q(value: str) -> str:
    return quote(value, safe="")


async def stylesheet(request: Any) -> Any:
    from starlette.responses import Response

    from tracestore.report.html import render_css

    return Response(render_css(), media_type="text/css")


@functools.lru_cache(maxsize=128)
def _filter_form(items: tuple[tuple[str, str], ...]) -> Any:
    """The filter form for these values (the same values give the same form: built once)."""
    from markupsafe import Markup

    from tracestore.review.queue_index import _EXTRA_APIS, REVIEW_STATES
    from tracestore.projections import reasons as R
    from tracestore.providers.base import PROVIDER_NAMES
    from tracestore.report.html import environment

    params = dict(items)
    return Markup(environment().get_template("filters.html.j2").render(
        params=params, filtered=any(v.strip() for v in params.values()),
        statuses=R.STATUSES, review_states=REVIEW_STATES,
        apis=(*PROVIDER_NAMES, *_EXTRA_APIS), codes_datalist=_codes_datalist))


async def index(desk: Desk, request: Any) -> Any:
    from tracestore.projections import reasons as R
    from tracestore.report.html import render_page
    from tracestore.serve.listing import FILTER_PARAMS, parse_filter, query_page

    params = {k: request.query_params.get(k, "") for k in FILTER_PARAMS}
    after = _int(request.query_params.get("after", "0"), "after")
    page = query_page(desk.store, parse_filter(params), after=after,
                      sync=desk.index_needs_sync())
    kept = {k: v for k, v in params.items() if v.strip()}
    next_url = (f"/?{urlencode({**kept, 'after': page.next_after})}"
                if page.next_after is not None else None)
    first_url = f"/?{urlencode(kept)}" if after else None
    return _html(render_page(
        "index.html.j2", version=desk.version, desk=desk.context(request), page=page,
        filter_form=lambda p: _filter_form(tuple(p.items())), params=params,
        filtered=bool(kept), next_url=next_url, first_url=first_url,
        descriptions=R.DESCRIPTIONS))


@functools.lru_cache(maxsize=1)
def _codes_datalist() -> Any:
    """The reason codes as a ``<datalist>`` (our vocabulary, the same on every page: built
    once, each code escaped)."""
    from markupsafe import Markup, escape

    from tracestore.projections import reasons as R

    return Markup('<datalist id="codes">' + "".join(
        f'<option value="{escape(c)}">' for c in sorted(R.DESCRIPTIONS)) + "</datalist>")


async def trace(desk: Desk, request: Any) -> Any:
    from tracestore.report.html import render_html
    from tracestore.report.model import build_report

    trace_id = request.path_params["trace_id"]
    only = [a for a in request.query_params.getlist("attempt") if a]
    events = desk.store.read(trace_id=trace_id)
    if not events:
        raise NotFound(f"no trace {trace_id!r} in {desk.database}", code="trace_not_found",
                       trace_id=trace_id)
    report = build_report(events, trace_id, attempts=only or None, template=desk.template,
                          version=desk.version)
    notice = None
    recorded = request.query_params.get("recorded", "")
    if recorded and re.fullmatch(r"\d+(,\d+)*", recorded):
        shown = ", ".join(f"#{p}" for p in recorded.split(","))
        notice = f"recorded {len(recorded.split(','))} review event(s) at {shown}"
    context = desk.context(request, notice)
    context.only = only
    return _html(render_html(report, version=desk.version, desk=context))


async def attempt(desk: Desk, request: Any) -> Any:
    from tracestore.api import Store

    attempt_id = request.path_params["attempt_id"]
    trace_id = Store(desk.store).trace_of(attempt_id)
    return _see(f"/trace/{_q(trace_id)}?attempt={_q(attempt_id)}")


async def reviewers(desk: Desk, request: Any) -> Any:
    """The reviewer registry: each key, whether it is an admin, and who registered it."""
    from tracestore.report.html import render_page
    from tracestore.review.signing import REVIEWERS_STREAM, SETTINGS_STREAM, registry_of

    stored = desk.store.read(stream=REVIEWERS_STREAM)
    registry = registry_of([*stored, *desk.store.read(stream=SETTINGS_STREAM)])
    first = next(iter(registry.keys), None)
    rows = []
    for event in stored:
        added = event.event
        signer = registry.keys.get(added.signed_by or "")
        if added.signed_by is not None:
            by = f"{signer.name if signer else '?'} (key {added.signed_by})"
        elif added.key_id == first:
            by = "the store's first key: its owner"
        else:
            by = "unsigned: registered before this store signed registrations"
        rows.append({"name": added.name, "key_id": added.key_id, "position": event.position,
                     "admin": added.key_id in registry.admins, "by": by})
    return _html(render_page("reviewers.html.j2", version=desk.version,
                             desk=desk.context(request), rows=rows,
                             unsigned="accepted" if registry.unsigned_allowed else "refused"))


async def events(desk: Desk, request: Any) -> Any:
    """A stretch of one attempt's events, each with its native JSON (what a folded run
    of a long attempt leaves out of the trace page)."""
    from tracestore.api import Store
    from tracestore.report.html import render_page
    from tracestore.report.model import _native_json

    attempt_id = request.path_params["attempt_id"]
    trace_id = Store(desk.store).trace_of(attempt_id)
    start = _int(request.query_params.get("from", "0"), "from")
    stored = [e for e in desk.store.read(attempt_id=attempt_id) if e.position >= start]
    shown = stored[:EVENTS_PAGE]
    rows = [(e.position, e.type, _native_json(e.event.native) if e.type == "frame.received"
             else _native_json(e.event.model_dump(mode="json"))) for e in shown]
    more = stored[EVENTS_PAGE].position if len(stored) > EVENTS_PAGE else None
    return _html(render_page("events.html.j2", version=desk.version,
                             desk=desk.context(request), attempt_id=attempt_id,
                             trace_id=trace_id, rows=rows, more=more))


async def review(desk: Desk, request: Any) -> Any:
    """One form post: its size first (413, read no further than ``MAX_FORM_BYTES``), CSRF
    and origin (403, nothing appended), then the CLI's own plan and checks."""
    from tracestore.api import Store
    from tracestore.review import load_template

    try:
        form = await _form(request)
    except FormTooLarge as exc:
        return error_page(desk, request, 413, "Form too large", f"{exc}; nothing was "
                          "recorded", "form_too_large")
    refusal = request.scope.get("state", {}).get("forbidden")
    assert desk.guard is not None
    if refusal is None and not desk.guard.csrf_ok(request.scope, form.get("csrf")):
        refusal = "a form without this session's CSRF token (reload the page and try again)"
    if refusal is not None:
        return error_page(desk, request, 403, "Refused", f"refused {refusal}; nothing was "
                          "recorded", "csrf_refused")
    if not (desk.config.reviewer or desk.config.key is not None):
        return error_page(desk, request, 403, "Read-only desk", "this desk was started "
                          "without --reviewer or a key: it cannot record reviews",
                          "desk_read_only")
    attempt_id = request.path_params["attempt_id"]
    trace_id = Store(desk.store).trace_of(attempt_id)
    template = load_template(str(form.get("template") or desk.template.name))
    action = form.get("action")
    if action not in ("set", "approve"):
        raise InputError("the form's action is set or approve", code="invalid_action")
    sets = []
    if action == "set":
        sets = [(str(form.get("field") or ""), str(form.get("value") or ""))]
    digest = str(form.get("digest") or "").strip() or None
    override = str(form.get("override_reason") or "").strip() or None
    written = desk.amend(template, attempt_id, trace_id, sets=sets,
                         approve=action == "approve",
                         evidence=parse_positions(str(form.get("evidence") or "")),
                         expect_digest=digest, override_reason=override)
    only = str(form.get("only") or "")
    view = f"&attempt={_q(only)}" if only else ""
    return _see(f"/trace/{_q(trace_id)}?recorded={','.join(map(str, written))}{view}")


class FormTooLarge(Exception):
    """A post larger than ``MAX_FORM_BYTES`` (declared, or found while reading it)."""


async def _form(request: Any) -> dict[str, str]:
    """An urlencoded form (what the desk's forms send; no multipart parser needed).

    The body is never read whole before it is judged: a declared ``Content-Length`` over
    the cap is refused before one byte is read, and a chunked body is read a chunk at a
    time and dropped once it passes the cap, so a huge post costs the desk at most
    ``MAX_FORM_BYTES`` plus one chunk of memory.  Any other content type is not read."""
    from urllib.parse import parse_qsl

    declared = request.headers.get("content-length")
    if declared is not None and (not declared.strip().isdigit()
                                 or int(declared) > MAX_FORM_BYTES):
        raise FormTooLarge(f"a form is at most {MAX_FORM_BYTES} bytes; this one declares "
                           f"{declared.strip()[:20]}")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return {}
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormTooLarge(f"a form is at most {MAX_FORM_BYTES} bytes; this one is "
                               "longer")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False,
                          max_num_fields=32)
    except (UnicodeDecodeError, ValueError):
        return {}
    return dict(pairs)


def parse_positions(text: str) -> list[int]:
    """"6, 10 #12" → [6, 10, 12] (``invalid_evidence`` for anything else)."""
    out = []
    for part in _POSITIONS.split(text.strip()):
        if not part:
            continue
        digits = part.removeprefix("#")
        if not digits.isdigit() or len(digits) > 12:
            raise InputError(f"evidence positions are numbers (6, 10); got {part!r}",
                             code="invalid_evidence", value=part)
        out.append(int(digits))
    return out


def _int(text: str, name: str) -> int:
    if not text.isdigit() or len(text) > 12:
        raise InputError(f"{name} is a log position (a number), not {text!r}",
                         code="invalid_position", option=name)
    return int(text)


def error_page(desk: Desk, request: Any, status: int, title: str, message: str,
               code: str | None) -> Any:
    from tracestore.report.html import render_page

    try:
        context = desk.context(request)
    except TracestoreError:  # the store itself is what failed: no banner to compute
        context = desk.context(request, banner=False)
    return _html(render_page("error.html.j2", version=desk.version, desk=context,
                             title=title, message=message, code=code, status=status,
                             back=None), status)


def error(desk: Desk, request: Any, exc: BaseException) -> Any:
    from tracestore.serve.app import status_of

    status = status_of(exc)
    if isinstance(exc, TracestoreError):
        from tracestore.text.masking import mask_secrets

        message = mask_secrets(exc.message)
        if status == 503:
            message = f"the desk cannot read its database {desk.database}: {message}"
        titles = {404: "Not found", 409: "Refused", 400: "Bad request",
                  503: "Database unavailable"}
        return error_page(desk, request, status, titles.get(status, "Error"), message,
                          exc.code)
    if status == 404:
        return error_page(desk, request, 404, "Not found",
                          f"nothing at {request.url.path}", "not_found")
    if status == 405:
        return error_page(desk, request, 405, "Method not allowed",
                          f"{request.method} is not allowed here", "method_not_allowed")
    return error_page(desk, request, 500, "Internal error", "the desk failed on this "
                      "page; the details are in the desk's log", "internal_error")
