"""A person's semantic verdict (``tracestore judge``): for task rules whose acceptance is
decided by a reviewer (``"semantic": "reviewer"``), not by patterns.

The verdict is a ``semantic.judged`` event on the attempt's stream, naming the answer it
judged by sha256 (a verdict on other text decides nothing), who judged (``by``) and why
(``note``), signed like every review (``review.signing``).  Until one is recorded the
release decision is ``pending`` with ``awaiting_reviewer_verdict``.  Pure: the CLI appends
what this plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from tracestore.errors import ReviewError
from tracestore.events import NewEvent, SemanticJudged, StoredEvent, attempt_stream
from tracestore.projections import reasons as R
from tracestore.review.amend import check_reviewer, check_value
from tracestore.review.context import find_attempt
from tracestore.review.signing import (
    Registry, require_unsigned_allowed, sign, signer_name,
)

VERDICTS: dict[str, Literal["accepted", "rejected"]] = {
    "accept": "accepted", "reject": "rejected"}


def plan_judgement(events: Sequence[StoredEvent], attempt_id: str, verdict: str, *,
                   reviewer: str | None, note: str | None = None,
                   registry: Registry | None = None, key: Any = None) -> NewEvent:
    from tracestore.projections.release import by_reviewer, decide_release, rule_in_force

    if verdict not in VERDICTS:
        from tracestore.errors import InputError

        raise InputError(f"the verdict is accept or reject, not {verdict!r}",
                         code="invalid_verdict", verdict=verdict)
    start = find_attempt(events, attempt_id)
    trace_id = start.event.trace_id
    rule = rule_in_force(events, trace_id).rule
    if not by_reviewer(rule):
        raise ReviewError(f"trace {trace_id}'s task rule decides acceptance by its patterns; "
                          'only a rule with "semantic": "reviewer" takes a person\'s verdict',
                          code="semantic_not_by_reviewer", trace_id=trace_id)
    decision = decide_release(events, attempt_id)
    if R.AWAITING_REVIEWER_VERDICT not in decision.reasons:
        raise ReviewError(f"attempt {attempt_id} is {decision.status} "
                          f"({', '.join(decision.reasons)}): no verdict is awaited",
                          code="verdict_not_awaited", status=decision.status)
    from tracestore.projections.attempt import project_attempt
    from tracestore.projections.semantics import sha256_text

    view = project_attempt(events, attempt_id)
    if view.drain is None or not view.terminals:
        raise ReviewError(f"attempt {attempt_id} has not ended cleanly yet (pending "
                          f"{', '.join(decision.reasons)}): judge the complete answer",
                          code="verdict_not_awaited", status=decision.status)
    registry = registry or Registry()
    if key is not None:
        name = signer_name(registry, key, None if reviewer is None else check_reviewer(reviewer))
    else:
        name = check_reviewer(reviewer)
        require_unsigned_allowed(registry)
    if note is not None:
        check_value("note", note)
    assert rule is not None
    event = SemanticJudged(attempt_id=attempt_id, verdict=VERDICTS[verdict], rule=rule,
                           answer_sha256=sha256_text(view.text), by=name, note=note)
    if key is not None:
        event = sign(event, key)
    return NewEvent(attempt_stream(attempt_id), event, trace_id=trace_id)
