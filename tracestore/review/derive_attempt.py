"""Derivers about one attempt's own stream: identity, native ending, candidate, ordering,
transport, and the release decision.

Each function reads the projections in ``ReviewContext`` (never the raw database) and says
what they show in one line, citing the positions it used.  It returns ``None`` only when
the events hold no fact at all for the field (e.g. no frame, terminal or drain yet), so the
record shows ``UNKNOWN`` instead of a sentence built on nothing.
"""

from __future__ import annotations

from typing import Any, Final

from tracestore.agent.codes import AGENT_API
from tracestore.events import FrameReceived, SemanticJudged, StoredEvent
from tracestore.projections import reasons as R
from tracestore.projections.usage import usage_basis
from tracestore.review.context import Derived, ReviewContext, conflict_check, deriver
# Wording and the reading of release claims have their own modules; importable from here too.
from tracestore.review.release_claims import says_not_released, says_released  # noqa: F401
from tracestore.review.wording import (  # noqa: F401
    MAX_LISTED, QUOTE_CHARS, capital, grouped, listed, plural, positions, quote, spread,
)

_ID_KEYS: Final = ("id", "responseId", "response_id", "item_id")
_ID_PARENTS: Final = ("response", "message")
_ID_SEARCHED: Final = frozenset({*_ID_KEYS, *_ID_PARENTS})


def _native_ids(native: Any) -> list[str]:
    """Response/message/item ids a provider put in one native event (one level deep)."""
    found: list[str] = []
    if not isinstance(native, dict) or native.keys().isdisjoint(_ID_SEARCHED):
        return found  # a frame with none of the keys (nearly every delta) names no id
    for key in _ID_KEYS:
        if isinstance(native.get(key), str):
            found.append(native[key])
    for parent in _ID_PARENTS:
        inner = native.get(parent)
        if isinstance(inner, dict) and isinstance(inner.get("id"), str):
            found.append(inner["id"])
    return found


def _frames(ctx: ReviewContext) -> list[StoredEvent]:
    return [e for e in ctx.attempt_events() if isinstance(e.event, FrameReceived)]


@deriver("attempt_correlation")
def attempt_correlation(ctx: ReviewContext) -> Derived:
    """The local attempt and every native identity that names it."""
    s, view = ctx.started, ctx.view
    parts = [f"Local attempt {s.attempt_id} (trace {s.trace_id}, reader {s.reader or 'unnamed'})"]
    cited: list[int] = [ctx.start.position]
    if s.retry_of:
        parts.append(f"retry of {s.retry_of}")
    if view.superseded_by is not None:
        parts.append(f"superseded by {view.superseded_by} at #{view.superseded_at}")
        cited.append(view.superseded_at or 0)
    first_seen: dict[str, int] = {}
    for frame in _frames(ctx):
        for native_id in _native_ids(frame.event.native):
            first_seen.setdefault(native_id, frame.position)
    if first_seen:
        parts.append("native ids: " + listed([f"{i} (#{p})" for i, p in first_seen.items()]))
        cited.extend(first_seen.values())
    elif view.frames:
        parts.append(f"no native response id in {view.frames} frames")
    else:
        parts.append("no native frames")
    return Derived.of("; ".join(parts), *cited)


def _after_stop(ctx: ReviewContext, position: int) -> str:
    stop = ctx.view.stop_position
    if stop is None:
        return ""
    side = "after" if stop < position else "before"
    return f", {side} local Stop at #{stop}"


@deriver("native_observation")
def native_observation(ctx: ReviewContext) -> Derived | None:
    """The native ending, native errors and forms outside the profile, and the drain."""
    view = ctx.view
    if not (view.terminals or view.errors or view.anomalies or view.drain):
        return None
    parts: list[str] = []
    cited: list[int | None] = [view.stop_position]
    for t in view.terminals:
        label = t.stop_reason or t.status or t.native_type
        parts.append(f"native {label} ({t.outcome}) at #{t.position}"
                     f"{_after_stop(ctx, t.position)}")
        cited.append(t.position)
    for e in view.errors:
        message = f' {quote(e.message)}' if e.message else ""
        parts.append(f"native {e.name}{message} ({e.classification}) at #{e.position}"
                     f"{_after_stop(ctx, e.position)}")
        cited.append(e.position)
    if view.anomalies:
        groups = grouped((a.code, a.native_type, a.detail, a.position) for a in view.anomalies)
        parts.append("outside the profile: " + listed(
            [f"{code} ({native}{': ' + detail if detail else ''}) at {spread(ps)}"
             for (code, native, detail), ps in groups.items()]))
        cited.extend(p for ps in groups.values() for p in (ps[0], ps[-1]))
    if not view.terminals:
        parts.append("no native terminal")
    if view.drain is not None:
        detail = f" ({view.drain.detail})" if view.drain.detail else ""
        parts.append(f"{view.drain.outcome} drain{detail} at #{view.drain.position}")
        cited.append(view.drain.position)
    else:
        parts.append("no drain observed")
    return Derived.of(capital("; ".join(parts)), *cited)


def _completeness(ctx: ReviewContext) -> str:
    view, term = ctx.view, ctx.view.terminal
    if view.errors and (term is None or view.errors[0].position < term.position):
        return f"Partial (native error at #{view.errors[0].position})"
    if term is None:
        return "Partial (no native terminal)"
    if term.outcome == "normal":
        return "Complete"
    return f"Ended {term.outcome} ({term.stop_reason or term.status or term.native_type})"


def _privacy(ctx: ReviewContext) -> tuple[str, list[int]]:
    held = {d: entries for d, entries in ctx.destinations.destinations.items() if entries}
    cited = [e.position for entries in held.values() for e in entries]
    if ctx.decision.eligible:
        return f"released to {', '.join(held) or 'no destination yet'}", cited
    if held:
        return f"NOT private: {', '.join(held)} hold text of this unreleased attempt", cited
    return "still private (no ui/history/export/copy write)", cited


def _final_texts(ctx: ReviewContext) -> list[str]:
    """Source final texts compared with the deltas (they are never appended)."""
    checks = ctx.view.final_texts
    agree = [c.position for c in checks if c.agrees and not c.duplicate]
    parts = [f"source final text agrees ({positions(agree)})"] if agree else []
    parts += [f"source final text {'DISAGREES' if not c.agrees else 'agrees'}"
              f"{', DUPLICATE' if c.duplicate else ''} at #{c.position}"
              for c in checks if c.duplicate or not c.agrees]
    return parts


@deriver("candidate")
def candidate(ctx: ReviewContext) -> Derived | None:
    """What the deltas assembled, whether it is complete, and who has seen it."""
    if ctx.started.api == AGENT_API:  # an agent run: its answer and cited sources
        from tracestore.review.agent import candidate as agent_candidate

        return agent_candidate(ctx)
    view = ctx.view
    if not view.blocks:
        if view.frames == 0 and view.drain is None:
            return None
        last = view.last_frame_position or (view.drain.position if view.drain else None)
        return Derived.of(f"No text candidate in {view.frames} frames; nothing to release", last)
    deltas = sum(len(b.deltas) for b in view.blocks)
    first, last = view.blocks[0].first_position, max(b.last_position for b in view.blocks)
    span = f"#{first}–#{last}" if last != first else f"#{first}"
    parts = [f"{_completeness(ctx)}: {plural(len(view.blocks), 'text block')} from "
             f"{plural(deltas, 'delta')} ({span})"]
    cited: list[int | None] = [first, last, view.terminal.position if view.terminal else None]
    if view.stop_position is not None and last > view.stop_position:
        parts.append(f"text continued after local Stop at #{view.stop_position}")
        cited.append(view.stop_position)
    parts += _final_texts(ctx)
    cited += [check.position for check in view.final_texts]
    privacy, privacy_cited = _privacy(ctx)
    parts.append(privacy)
    parts.append(f"text: {quote(view.text)}")
    contract = contract_summary(ctx)
    if contract is not None:
        parts.append(contract)
        cited.append(ctx.decision.decided_at_position)
    return Derived.of("; ".join(parts), *cited, *privacy_cited)


def contract_summary(ctx: ReviewContext) -> str | None:
    """A structured answer's contract verdict with the positions of its problems, and the
    request binding's state (UNKNOWN when none was recorded: never "checked")."""
    report = ctx.decision.contract
    if report is None:
        return None
    binding = "binding checked" if report.binding == "checked" else "binding UNKNOWN (none recorded)"
    if report.frame_failure is not None and ctx.view.frame_failure is not None:
        failure = ctx.view.frame_failure
        where = f" ({failure.detail})" if failure.detail else ""
        return (f"structured reply under contract {report.contract or 'none'}: frame rule "
                f"{failure.code} at #{failure.position}{where}; {binding}")
    verdict = report.verdict
    if verdict is None:
        return (f"structured reply under contract {report.contract or 'none'}: not parsed "
                f"(status {ctx.decision.status}); {binding}")
    found = listed([f"{p.loc}: {p.msg}" for p in verdict.problems])
    cites = listed([c.source_id for c in verdict.citations])
    version = f" v{verdict.version}" if verdict.version is not None else ""
    return (f"structured reply under contract {report.contract}{version}: "
            f"{verdict.code}" + (f" ({found})" if found else "")
            + (f"; cites {cites}" if cites else "") + f"; {binding}")


def _judged_at(ctx: ReviewContext) -> StoredEvent | None:
    return next((e for e in ctx.attempt_events() if isinstance(e.event, SemanticJudged)), None)


def _milestones(ctx: ReviewContext) -> list[tuple[int, str]]:
    view = ctx.view
    items: list[tuple[int, str]] = []
    if view.stop_position is not None:
        items.append((view.stop_position, "local Stop"))
    if view.superseded_at is not None:
        items.append((view.superseded_at, f"retry {view.superseded_by} opened"))
    if view.terminal is not None:
        t = view.terminal
        items.append((t.position, f"native {t.stop_reason or t.status or t.native_type}"))
    if view.errors:
        items.append((view.errors[0].position, f"native {view.errors[0].name}"))
    if view.drain is not None:
        items.append((view.drain.position, f"{view.drain.outcome} drain"))
    judged = _judged_at(ctx)
    if judged is not None:
        items.append((judged.position, f"semantic {judged.event.verdict}"))
    return sorted(items)


def _stop_verdict(ctx: ReviewContext) -> str:
    view, d = ctx.view, ctx.decision
    stop = view.stop_position
    if stop is None:
        return "no local Stop recorded"
    if d.eligible and d.decided_at_position is not None and d.decided_at_position < stop:
        return "Stop recorded after the release; it does not undo it"
    judged = _judged_at(ctx)
    acceptance = ("" if judged is not None and judged.position < stop
                  else " and before any acceptance")
    if view.terminal is None or stop < view.terminal.position:
        return f"Stop recorded before the native terminal{acceptance}"
    return f"Stop recorded after the native terminal, before release{acceptance}"


@deriver("local_ordering")
def local_ordering(ctx: ReviewContext) -> Derived | None:
    """Stop, retry, terminal, drain and acceptance in global order (never by clock)."""
    items = _milestones(ctx)
    if not items:
        return None
    chain = " → ".join(f"{label} #{pos}" for pos, label in items)
    return Derived.of(capital(f"{chain}; {_stop_verdict(ctx)}"), *(p for p, _ in items))


@deriver("event_order")
def event_order(ctx: ReviewContext) -> Derived:
    """The attempt's whole shape: start, frame span, then the ordering milestones."""
    s, view = ctx.started, ctx.view
    frames = _frames(ctx)
    parts = [f"started #{ctx.start.position} (reader {s.reader or 'unnamed'}"
             f"{', retry of ' + s.retry_of if s.retry_of else ''})"]
    cited = [ctx.start.position]
    if frames:
        parts.append(f"{len(frames)} frames #{frames[0].position}–#{frames[-1].position}")
        cited += [frames[0].position, frames[-1].position]
    else:
        parts.append("no frames")
    items = _milestones(ctx)
    if items:
        parts.append(" → ".join(f"{label} #{pos}" for pos, label in items))
        cited += [p for p, _ in items]
    parts.append(_stop_verdict(ctx))
    if view.drain is None:
        parts.append("no drain observed")
    return Derived.of("; ".join(parts), *cited)


@deriver("transport_accounting")
def transport_accounting(ctx: ReviewContext) -> Derived | None:
    """Drain outcome and usage metadata; absent usage is said to be absent, never zero."""
    view = ctx.view
    if view.drain is None and view.usage is None and view.terminal is None:
        return None
    if view.drain is not None:
        detail = f" ({view.drain.detail})" if view.drain.detail else ""
        drain = f"{view.drain.outcome} drain{detail} at #{view.drain.position}"
    else:
        drain = "no drain observed"
    if view.usage is not None:
        usage = ", ".join(f"{k}={v}" for k, v in view.usage.items())
        accounting = (f"usage {usage} at {positions(view.usage_positions)} "
                      f"({usage_basis(view.api)})")
    else:
        accounting = "no usage metadata (recorded as absent, never as zero)"
    return Derived.of(capital(f"{drain}; {accounting}"),
                      view.drain.position if view.drain else None,
                      *view.usage_positions)


def _note(code: str) -> str:
    """``note frames_after_decision (native frames arrived after …)``."""
    text = R.DESCRIPTIONS.get(code, "").rstrip(".")
    return f"note {code} ({text[:1].lower() + text[1:]})" if text else f"note {code}"


@deriver("release_decision")
def release_decision(ctx: ReviewContext) -> Derived:
    """The recomputed decision, with its reasons, notes and any disagreeing recorded one."""
    d = ctx.decision
    reasons = ", ".join(d.reasons)
    if d.status == R.PENDING:
        last = ctx.attempt_events()[-1].position
        head = f"Pending: not released as of #{last} ({reasons})"
        cited: list[int | None] = [ctx.start.position, last]
    elif d.eligible:
        head = f"Released at #{d.decided_at_position} ({reasons})"
        cited = [d.decided_at_position]
    else:
        head = f"Ineligible: {d.status} at #{d.decided_at_position} ({reasons})"
        cited = [d.decided_at_position]
    parts = [head, f"policy {d.policy_version}", *(_note(n) for n in d.notes)]
    if ctx.view.structured or R.EMPTY_ANSWER in d.reasons:
        from tracestore.projections.envelope import project_envelope

        envelope = project_envelope(d, ctx.view)
        if envelope is not None:  # what a front end may show (seed 004)
            parts.append(f"envelope {envelope.state}/{envelope.code}"
                         + (" (retryable)" if envelope.retryable else "")
                         + (", validated result" if envelope.result is not None else ""))
    recorded = ctx.recorded_decision()
    if recorded is not None:
        r = recorded.event
        if (r.status, r.eligible, r.reasons, r.decided_at_position) != (
                d.status, d.eligible, d.reasons, d.decided_at_position):
            parts.append(f"the decision recorded at #{recorded.position} ({r.status}, "
                         f"policy {r.policy_version}) DIFFERS from this recomputation")
        cited.append(recorded.position)
    return Derived.of("; ".join(parts), *cited)


@conflict_check("release_decision")
def release_conflict(value: str, ctx: ReviewContext) -> bool:
    """True when the reviewer's words contradict the derived release outcome.

    Deliberately eager: a reviewer value that claims release for an unreleased attempt (or
    names a not-released outcome for a released one) is flagged even when it also says
    something else, because a false alarm costs a look and a missed one hides a leak.
    """
    if ctx.decision.eligible:
        return says_not_released(value)
    return says_released(value)
