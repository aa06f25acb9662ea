"""Conflict checks: does a reviewer's value contradict what the events show?

Every derived field has a check (a test keeps it so).  Each reads the reviewer's words for
the claims its field can make — released or not, delivered or absent, a native stop reason,
a drain outcome, an origin, a tool, a Stop before or after the terminal — and compares them
with the projections in ``ReviewContext``.  Checks are deliberately eager: a false alarm
costs a reviewer a look, a missed one hides a leak.  Negated phrases ("not delivered",
"never released") are removed before positive claims are looked for.

A reviewer value on a field whose derivation is UNKNOWN cannot conflict with anything;
there ``amend`` asks PASS-like values for cited evidence instead (``needs_evidence``).
"""

from __future__ import annotations

import re
from typing import Final

from tracestore.events import ANSWER_DESTINATIONS, AttemptStarted
from tracestore.projections.profiles import PROFILES
from tracestore.providers.base import PROVIDER_NAMES
from tracestore.review.context import ReviewContext, conflict_check
from tracestore.review.derive_trace import observed_model
from tracestore.review.release_claims import says_not_released, says_released

_NEGATION: Final = re.compile(
    r"\b(?:not|never|no longer|nothing|without)\s+(?:been\s+|be\s+|yet\s+|was\s+|were\s+)?"
    r"[\w/-]+", re.IGNORECASE)


#: A clause that opens with "no" ("No tool configured, proposed or authorized") denies
#: everything up to the end of the clause.
_NO_CLAUSE: Final = re.compile(r"\bno\s+[^;.]*", re.IGNORECASE)


def _positive(text: str) -> str:
    """The reviewer text with negated phrases removed (what it positively claims)."""
    return _NO_CLAUSE.sub(" ", _NEGATION.sub(" ", text))


def _has(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


# -- destinations -------------------------------------------------------------------------

_DELIVERED: Final = (r"\b(?:delivered|written|shown|displayed|sent|copied|exported|saved|"
                     r"reached|received|receives?|holds?)\b"
                     r"|\b(?:in|to|into)\s+(?:the\s+)?(?:ui|history|export|copy)\b")
_ABSENT: Final = (r"\b(?:absent|private|withheld|none|not\s+(?:delivered|written|shown|"
                  r"executed|released)|no\s+(?:ui|history|export|copy|destination|answer)|"
                  r"nothing\s+(?:was\s+)?(?:written|delivered|shown))\b")


def _claims_delivery(value: str) -> bool:
    return _has(_DELIVERED, _positive(value))


def _answer_writes(ctx: ReviewContext, source: str | None = None) -> int:
    held = ctx.destinations.destinations
    return sum(1 for d in ANSWER_DESTINATIONS for e in held[d]
               if source is None or e.source == source)


@conflict_check("accepted_destinations")
@conflict_check("expected_destinations")
def destinations_conflict(value: str, ctx: ReviewContext) -> bool:
    """Delivery claimed for an unreleased answer, or absence claimed for a released one."""
    if ctx.decision.eligible:
        return _has(_ABSENT, value) and not _claims_delivery(value)
    return _claims_delivery(value)


@conflict_check("actual_destinations")
def actual_destinations_conflict(value: str, ctx: ReviewContext) -> bool:
    """Delivery claimed where the application wrote nothing, or absence where it did."""
    written = _answer_writes(ctx, "application") > 0
    if written:
        return _has(_ABSENT, value) and not _claims_delivery(value)
    return _claims_delivery(value)


# -- release and candidate ----------------------------------------------------------------

@conflict_check("candidate")
def candidate_conflict(value: str, ctx: ReviewContext) -> bool:
    """Released/delivered claimed for an unreleased candidate (or private for a released
    one); complete claimed for a partial candidate, partial for a complete one."""
    if ctx.decision.eligible:
        if _has(r"\b(?:private|withheld|unreleased)\b", _positive(value)):
            return True
    elif says_released(value) or _claims_delivery(value):
        return True
    term = ctx.view.terminal
    complete = term is not None and term.outcome == "normal" and not ctx.view.errors
    if complete:
        return _has(r"\b(?:partial|truncated|incomplete|cut off)\b", _positive(value))
    return _has(r"\bcomplete\b", _positive(value))


@conflict_check("semantic_rule")
def semantic_conflict(value: str, ctx: ReviewContext) -> bool:
    """Acceptance claimed when the rule rejected it or never judged it, or the reverse."""
    j = ctx.decision.judgement
    accepted = _has(r"\b(?:accepted|passed|pass|correct|matches)\b", _positive(value))
    rejected = _has(r"\b(?:rejected|failed|fails|wrong|does not match)\b", value)
    if j is not None and j.verdict == "accepted":
        return rejected and not accepted
    return accepted


# -- native ending and transport ----------------------------------------------------------

def _stop_reason_words() -> frozenset[str]:
    """Distinctive native stop reasons and statuses (never ordinary English words)."""
    words = {r.stop_reason for p in PROFILES.values() for r in p.terminals if r.stop_reason}
    words |= {"stop_sequence", "content_filter", "guardrail_intervened", "SAFETY",
              "RECITATION", "requires_action", "max_output_tokens"}
    return frozenset(w for w in words if "_" in w or w.isupper())


STOP_REASON_WORDS: Final = _stop_reason_words()
_DRAIN: Final = re.compile(r"\b(clean|eof|error|reset)\s+drain|\bdrain(?:ed)?\s+(?:by\s+)?"
                           r"(clean(?:ly)?|eof|reset)\b", re.IGNORECASE)


def _names_other_stop_reason(value: str, ctx: ReviewContext) -> bool:
    shown = {t.stop_reason for t in ctx.view.terminals} | {t.status for t in ctx.view.terminals}
    named = {w for w in STOP_REASON_WORDS if re.search(rf"\b{re.escape(w)}\b", value)}
    return bool(named - shown)


def _names_other_drain(value: str, ctx: ReviewContext) -> bool:
    claimed = {(m.group(1) or m.group(2)).lower().removesuffix("ly")
               for m in _DRAIN.finditer(_positive(value))}
    if not claimed:
        return False
    actual = ctx.view.drain.outcome if ctx.view.drain else None
    return claimed != {actual}


@conflict_check("native_observation")
def native_conflict(value: str, ctx: ReviewContext) -> bool:
    """A stop reason or drain outcome the events do not show, or a terminal that is not
    there (or 'no terminal' when there is one)."""
    if _names_other_stop_reason(value, ctx) or _names_other_drain(value, ctx):
        return True
    says_none = _has(r"\bno\s+(?:native\s+)?terminal\b", value)
    return says_none and bool(ctx.view.terminals)


@conflict_check("transport_accounting")
def transport_conflict(value: str, ctx: ReviewContext) -> bool:
    """Another drain outcome; usage denied when recorded; a zero where usage is absent."""
    if _names_other_drain(value, ctx):
        return True
    if ctx.view.usage is not None:
        return _has(r"\bno\s+usage\b|\busage\s+(?:is\s+)?absent\b", value)
    return _has(r"\b(?:zero|0)\s+(?:usage|tokens?)\b|\busage\b[^;]*\b0\b", value)


# -- ordering ------------------------------------------------------------------------------

_STOP_SIDE: Final = re.compile(r"\bstop\b[^;.]*?\b(before|after)\b[^;.]*?\b(terminal|end_turn|"
                               r"ending|release|acceptance)", re.IGNORECASE)


@conflict_check("local_ordering")
@conflict_check("event_order")
def ordering_conflict(value: str, ctx: ReviewContext) -> bool:
    """A Stop placed on the other side of the terminal or release than the log shows, or a
    Stop claimed where none was recorded."""
    stop = ctx.view.stop_position
    claims = [(m.group(1).lower(), m.group(2).lower()) for m in _STOP_SIDE.finditer(value)]
    if stop is None:
        return bool(claims)
    term = ctx.view.terminal
    decided = ctx.decision.decided_at_position if ctx.decision.eligible else None
    for side, anchor in claims:
        at = decided if anchor in ("release", "acceptance") else (
            term.position if term else None)
        if at is None:
            continue
        if (side == "before") != (stop < at):
            return True
    return False


# -- identity, settings, origin, profile, revisions ---------------------------------------

def _names(value: str, vocabulary: set[str]) -> set[str]:
    return {w for w in vocabulary if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", value)}


@conflict_check("attempt_correlation")
def correlation_conflict(value: str, ctx: ReviewContext) -> bool:
    """Another attempt of the log named as this one (retry links aside)."""
    others = {e.event.attempt_id for e in ctx.events if isinstance(e.event, AttemptStarted)}
    allowed = {ctx.attempt_id, ctx.started.retry_of, ctx.view.superseded_by} - {None}
    named = _names(value, others)
    return bool(named) and ctx.attempt_id not in named and bool(named - allowed)


def _api_or_model_conflict(value: str, ctx: ReviewContext, derived: str) -> bool:
    if _names(value, set(PROVIDER_NAMES)) - _names(derived, set(PROVIDER_NAMES)):
        return True
    if _names(value, set(PROFILES)) - _names(derived, set(PROFILES)):
        return True
    seen = observed_model(ctx)
    model_claim = re.search(r"\bmodel\s+([\w.:/@-]+)", value, re.IGNORECASE)
    return bool(seen and model_claim and model_claim.group(1) not in (seen[0], "UNKNOWN"))


def _derived_text(name: str, ctx: ReviewContext) -> str:
    from tracestore.review.derivers import get_deriver

    func = get_deriver(name)
    derived = func(ctx) if func else None
    return derived.value if derived else ""


@conflict_check("attempt_profile")
def profile_settings_conflict(value: str, ctx: ReviewContext) -> bool:
    """Another API, profile or model than the attempt and its bytes show."""
    return _api_or_model_conflict(value, ctx, _derived_text("attempt_profile", ctx))


@conflict_check("source_settings")
@conflict_check("comparison")
def comparison_conflict(value: str, ctx: ReviewContext) -> bool:
    """An API or profile the recorded comparison (or the bytes) does not name."""
    derived = _derived_text("comparison", ctx) or _derived_text("source_settings", ctx)
    return _api_or_model_conflict(value, ctx, derived)


@conflict_check("output_profile")
def output_profile_conflict(value: str, ctx: ReviewContext) -> bool:
    """Another profile, or tools/reasoning said to be allowed when the profile excludes them."""
    profile = PROFILES.get(ctx.view.profile or "")
    if _names(value, set(PROFILES)) - {ctx.view.profile}:
        return True
    if profile is None:
        return False
    positive = _positive(value)
    return ((not profile.tools_allowed and _has(r"\btools?\s+(?:are\s+)?allowed\b", positive))
            or (not profile.reasoning_allowed
                and _has(r"\breasoning\s+(?:is\s+)?allowed\b", positive)))


_ORIGINS: Final = ("synthetic projection", "decoded capture", "framed capture")


@conflict_check("trace_origin")
def origin_conflict(value: str, ctx: ReviewContext) -> bool:
    """An origin other than the one recorded with the trace."""
    recorded = (ctx.trace.origin if ctx.trace else None) or ""
    named = {o for o in _ORIGINS if o in value.lower()}
    return bool(recorded) and bool(named) and not any(o in recorded for o in named)


@conflict_check("reader_revision")
def revision_conflict(value: str, ctx: ReviewContext) -> bool:
    """Another release-policy version than the one that derived (or recorded) the decision."""
    from tracestore.projections import reasons as R

    known = {R.POLICY_VERSION}
    recorded = ctx.recorded_decision()
    if recorded is not None:
        known.add(recorded.event.policy_version)
    named = set(re.findall(r"\bseed\d+-v\d+\b", value))
    return bool(named - known)


# -- authority, gaps, cancellation ----------------------------------------------------------

@conflict_check("authority")
def authority_conflict(value: str, ctx: ReviewContext) -> bool:
    """A tool said to be authorized, dispatched or run when none was; or none said when one
    was proposed."""
    from tracestore.projections import reasons as R

    used = any(a.code == R.TOOL_USE_NOT_ALLOWED for a in ctx.view.anomalies)
    profile = PROFILES.get(ctx.view.profile or "")
    allows = profile is not None and profile.tools_allowed
    if not allows and _has(r"\b(?:authori[sz]ed|dispatched|executed|ran|admitted|called)\b",
                           _positive(value)):
        return True  # a profile without tools never admits one
    return used and _has(r"\bno\s+tool(?:s|\s+use)?\s+(?:was\s+)?(?:proposed|observed|used)",
                         value)


@conflict_check("evidence_gap")
def gap_conflict(value: str, ctx: ReviewContext) -> bool:
    """'No gaps' while the log itself shows some."""
    return _has(r"^\s*(?:none|no gaps?|nothing)\b", value) and bool(
        _derived_text("evidence_gap", ctx))


@conflict_check("remote_cancellation")
def cancellation_conflict(value: str, ctx: ReviewContext) -> bool:
    """Derived only as the receipts attached, which a reviewer's value judges rather than
    contradicts: see ``needs_evidence`` for a PASS without one."""
    return False


# -- PASS-like values on UNKNOWN fields -----------------------------------------------------

#: Compiled on the first reviewer value checked (``re`` caches it): a record read without
#: amending does not pay for it.
_PASS_LIKE: Final = (
    r"\b(?:pass(?:ed|es)?|ok|okay|yes|true|verified|confirmed|proven|succeeded|success(?:ful)?|"
    r"cancell?ed|approved|acknowledged|receipt received|done)\b")


def pass_like(value: str) -> bool:
    """The value asserts success (PASS, verified, cancelled …), negations aside."""
    return re.search(_PASS_LIKE, _positive(value), re.IGNORECASE) is not None


__all__ = ["STOP_REASON_WORDS", "pass_like", "says_not_released", "says_released"]
