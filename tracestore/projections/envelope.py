"""Seed 004's envelope: the one shape a front end receives for an attempt, from its events.

``state`` is ``ok``, ``empty``, ``partial`` or ``error``; ``text`` is always renderable;
``code`` is for logs and retry logic; ``retryable`` drives a retry button; ``result`` is the
validated structured reply and is set ONLY when the contract accepted it.  The projection
is pure: a release decision and its attempt view in, an envelope (or None) out.

Rules, after seed 004: an answer is ``ok`` only when released.  A normal ending with no
text is ``empty`` (the call worked and said nothing), never an answer.  Plain text cut off
(interrupted, a length limit, a local Stop) is ``partial`` with the text so far — shown
marked as cut off, and never written to the answer destinations (history, export, copy);
half of a JSON text is not an answer, so a structured attempt is ``error`` instead.
Errors show a fixed message.  A pending or superseded attempt has no envelope: there is
nothing of its own to show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tracestore.projections import reasons as R

NO_ANSWER = "No answer was produced. Please rephrase the question."
SORRY = "Sorry, I could not produce an answer. Please try again."
#: Codes a retry may fix: a dropped stream, a provider error, a model's bad reply.
RETRY_LATER = frozenset({
    "invalid_json", "invalid_schema", "interrupted", "stream_error", "untrusted_value",
    "invalid_answer_json", "invalid_answer_schema", "unknown_context_citation", "stopped",
})
#: Provider error codes that a retry cannot fix: the request, the key or the account must
#: change first (Anthropic's error types; OpenAI's and Gemini's codes and statuses, as their
#: SDKs and API references document them).  A retry button on these only fails again.
NOT_RETRYABLE_ERRORS = frozenset({
    "authentication_error", "permission_error", "invalid_request_error", "not_found_error",
    "request_too_large", "billing_error",
    "invalid_api_key", "insufficient_quota", "model_not_found", "context_length_exceeded",
    "invalid_prompt", "unsupported_parameter", "content_filter",
    "INVALID_ARGUMENT", "PERMISSION_DENIED", "UNAUTHENTICATED", "NOT_FOUND",
    "FAILED_PRECONDITION", "400", "401", "403", "404",
})
_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: Envelope codes that are not release reasons (documented in docs/release-policy.md).
ENVELOPE_CODES = ("ok", "empty", "interrupted", "truncated", "stream_error", "stopped",
                  "unusable_stop")
#: Release reasons whose envelope code is the name ``contract check`` gives the same stop
#: (seed 004's ``parse_contract``: one name per stop code).
STOP_CODES = {R.UNKNOWN_STOP_REASON: "unusable_stop"}


@dataclass(frozen=True, slots=True)
class Envelope:
    state: str
    text: str
    code: str = "ok"
    retryable: bool = False
    result: dict[str, Any] | None = None
    schema_version: int = 2

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, "state": self.state, "text": self.text,
                "code": self.code, "retryable": self.retryable, "result": self.result}


def _error(code: str) -> Envelope:
    return Envelope("error", SORRY, code, code in RETRY_LATER)


def _cut(structured: bool, text: str, code: str, retryable: bool) -> Envelope:
    if structured or not text.strip():
        return Envelope("error", SORRY, code, retryable)
    return Envelope("partial", text, code, retryable)


def project_envelope(decision: Any, view: Any) -> Envelope | None:
    """The envelope for a ``ReleaseDecision`` and its ``AttemptView``."""
    status, structured = decision.status, view.structured
    if status in (R.PENDING, R.SUPERSEDED):
        return None
    if status == R.RELEASED:
        report = decision.contract
        if structured and report is not None and report.verdict is not None:
            reply = report.verdict.reply or {}
            answer = reply.get(report.answer_field) if report.answer_field else None
            result = getattr(report, "answer_model", None)  # seed 004's internal Answer
            return Envelope("ok", answer if isinstance(answer, str) else "",
                            result=result if result is not None else reply)
        return Envelope("ok", decision.answer or "")
    if R.EMPTY_ANSWER in decision.reasons:
        return Envelope("empty", NO_ANSWER, "empty")
    # Only the text as of the decision: a late answer after a Stop must not leak (seed 003).
    text = decision.decided_text or ""
    if status == R.INTERRUPTED and R.NATIVE_EXCEPTION in decision.reasons:
        # The provider's own error event broke the stream (seed 003's T2): seed 004 shows
        # an error mid-stream as ``error`` with the fixed message, and keeps ``partial``
        # for a stream that was dropped (no terminal, no error event).
        return _error("stream_error")
    if status == R.INTERRUPTED:
        return _cut(structured, text, "interrupted", True)
    if status == R.LIMITED:
        return _cut(structured, text, "truncated", False)
    if status == R.STOPPED:
        return _cut(structured, text, "stopped", True)
    sent = getattr(view, "sent_envelope", None)
    if status == R.FAILED and isinstance(sent, dict) and sent.get("state") == "error":
        # An endpoint's own error envelope (seed 004): keep its code when it is a plain
        # code word; anything else from the wire is not repeated.
        code = sent.get("code")
        return _error(code if isinstance(code, str) and _CODE.fullmatch(code)
                      else "stream_error")
    if status == R.FAILED:
        errors = getattr(view, "errors", ()) or ()
        if any(e.error_code in NOT_RETRYABLE_ERRORS or e.name in NOT_RETRYABLE_ERRORS
               for e in errors):  # e.g. Anthropic authentication_error
            return Envelope("error", SORRY, "stream_error", False)
        return _error("stream_error")
    if status == R.REJECTED and decision.contract is not None and \
            decision.contract.verdict is not None and not decision.contract.verdict.ok:
        return _error(decision.contract.verdict.code)
    first = decision.reasons[0] if decision.reasons else status
    return _error(STOP_CODES.get(first, first))
