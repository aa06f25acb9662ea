"""Judge one complete structured reply against a contract (pure: text in, verdict out).

The order is seed 004's ``parse_contract`` extended by seed 000's checks: size (before
parsing: reject, never cut), strict JSON (duplicate keys, NaN/Infinity, nesting bound),
version, schema (fields, types, bounds, identifier pattern), then the untrusted values —
every cited id must belong to the context bound to THIS request, every link must pass the
URL rule — and last the status/citation consistency.  The first failing step decides; its
code is the contract's name for that failure kind.

The stop reason is not judged here: the release projection only calls this after a normal
native ending and a clean drain (half a JSON text is never an answer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracestore.contracts.binding import BoundContext, Citation

if TYPE_CHECKING:  # annotations only: a release without a bound contract never loads the
    # contract models (their pydantic classes were ~20 ms of ``tracestore release``).
    from tracestore.contracts.model import Contract
from tracestore.contracts.urls import check_url
from tracestore.providers.strictjson import StrictJSONError, strict_parse

#: Problems listed per verdict (a hostile reply can have thousands).
MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class Problem:
    loc: str
    "Where: a JSON path (``cited_ids/0``) or ``char N`` for a syntax error."
    msg: str

    def to_dict(self) -> dict[str, str]:
        return {"loc": self.loc, "msg": self.msg}


@dataclass(frozen=True)
class ReplyVerdict:
    ok: bool
    code: str
    "``ok`` or the contract's failure code."
    kind: str | None = None
    "The failure kind (``invalid_json``, ``unknown_citation`` …), None when ok."
    detail: str | None = None
    "A finer code: ``duplicate_json_key``, ``invalid_json_constant``, ``json_too_deep``."
    problems: tuple[Problem, ...] = ()
    reply: dict[str, Any] | None = None
    version: int | None = None
    citations: tuple[Citation, ...] = ()
    citations_checked: bool = False
    "False when no request binding was available to check cited ids against."
    extra: dict[str, Any] = field(default_factory=dict)

    def reasons(self) -> tuple[str, ...]:
        return (self.code,) + ((self.detail,) if self.detail else ())


def _fail(contract: Contract, kind: str, problems: list[Problem], detail: str | None = None,
          **kw: Any) -> ReplyVerdict:
    return ReplyVerdict(False, contract.code(kind), kind, detail,
                        tuple(problems[:MAX_PROBLEMS]), **kw)


def _bad_unicode(node: Any, path: str = "") -> str | None:
    """The path of a string holding a lone surrogate (valid JSON escapes, invalid text)."""
    if isinstance(node, str):
        try:
            node.encode("utf-8")
        except UnicodeEncodeError:
            return path or "(top)"
    elif isinstance(node, dict):
        for key, value in node.items():
            found = _bad_unicode(key, path) or _bad_unicode(value, f"{path}/{key}".lstrip("/"))
            if found:
                return found
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found = _bad_unicode(value, f"{path}/{index}".lstrip("/"))
            if found:
                return found
    return None


def _loc(path: Any) -> str:
    return "/".join(str(p) for p in path) or "(top)"


def _version(contract: Contract, payload: Any) -> tuple[bool, int | None]:
    name = contract.doc.version_field
    if name is None:
        return True, None
    version = payload.get(name) if isinstance(payload, dict) else None
    # ``type(...) is int``: True == 1 in Python, and a boolean is not a version.
    if type(version) is not int or version not in contract.validators:
        return False, None
    return True, version


def judge_reply(contract: Contract, text: str, context: BoundContext | None = None, *,
                max_bytes: int | None = None) -> ReplyVerdict:
    """The verdict on ``text`` (the whole candidate) under ``contract``.

    ``context`` is the request's bound context; without one, cited ids cannot be checked
    and the verdict says so (``citations_checked`` False) rather than calling them checked.
    ``max_bytes`` overrides the contract's reply bound (regression cases use it).
    """
    doc = contract.doc
    limit = doc.max_reply_bytes if max_bytes is None else max_bytes
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        return _fail(contract, "too_large", [Problem("(top)", f"{size} bytes; the limit is {limit}")])
    try:
        payload = strict_parse(text, max_depth=doc.max_depth)
    except StrictJSONError as exc:
        detail = exc.kind if exc.kind != "invalid_json" else None
        return _fail(contract, "invalid_json", [Problem("(text)", str(exc))], detail)
    known, version = _version(contract, payload)
    if not known:
        return _fail(contract, "unknown_version",
                     [Problem(doc.version_field or "", "missing or not an accepted version")])
    errors = sorted(contract.validators[version].iter_errors(payload),
                    key=lambda e: (list(map(str, e.absolute_path)), e.message))
    problems = [Problem(_loc(e.absolute_path), e.message) for e in errors]
    bad = _bad_unicode(payload)
    if bad is not None:
        problems.append(Problem(bad, "text with a lone surrogate is not valid Unicode"))
    if problems:
        return _fail(contract, "invalid_schema", problems, version=version)
    return _untrusted(contract, payload, version, context)


def _untrusted(contract: Contract, reply: dict[str, Any], version: int | None,
               context: BoundContext | None) -> ReplyVerdict:
    doc = contract.doc
    ids = list(reply.get(doc.citation_field, [])) if doc.citation_field else []
    links = list(reply.get(doc.link_field, [])) if doc.link_field else []
    checked = context is not None
    citations: list[Citation] = []
    if context is not None:
        unknown = [Problem(f"{doc.citation_field}/{i}", f"cited id {key!r} is not in the "
                           "context bound to this request")
                   for i, key in enumerate(ids) if context.resolve(key) is None]
        if unknown:
            return _fail(contract, "unknown_citation", unknown, version=version)
        citations = [c for c in map(context.resolve, ids) if c is not None]
    bad_links = [Problem(f"{doc.link_field}/{i}", f"link {str(url)[:40]!r}: {why}")
                 for i, url in enumerate(links) if (why := check_url(url, doc.link_hosts))]
    if bad_links:
        return _fail(contract, "untrusted_link", bad_links, version=version)
    status = reply.get(doc.status_field) if doc.status_field else None
    if (status in doc.citations_required and not ids) or (status in doc.citations_forbidden
                                                          and ids):
        need = "needs a citation" if not ids else "must carry no citation"
        return _fail(contract, "status_citation",
                     [Problem(doc.status_field or "", f"status {status!r} {need}")],
                     version=version)
    return ReplyVerdict(True, "ok", reply=reply, version=version,
                        citations=tuple(citations), citations_checked=checked)
