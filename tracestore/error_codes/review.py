"""Error codes of review records: the review commands' options, values, evidence,
reviewers, templates, approvals and signatures (exit 2 for bad input, 5 for an action the
record refuses).

Declared here, registered by ``tracestore.error_codes`` (import them from there).
"""

from __future__ import annotations

from typing import Final

from tracestore.error_codes.entry import _code

# -- reviews ---------------------------------------------------------------------------------
ACTION_REQUIRED: Final = _code("action_required", 2, "Review-batch was given nothing to do (no "
    "--set, no --approve).")
FILTER_REQUIRED: Final = _code("filter_required", 2, "Review-batch needs at least one filter.")
ATTEMPT_REQUIRED: Final = _code("attempt_required", 2, "Review needs an ATTEMPT (or --blank).")
BLANK_TAKES_NO_ATTEMPT: Final = _code("blank_takes_no_attempt", 2, "The --blank record takes no "
    "attempt or action.")
TRACE_REQUIRED: Final = _code("trace_required", 2, "The command needs a TRACE or an --attempt.")
ATTEMPT_NOT_IN_TRACE: Final = _code("attempt_not_in_trace", 2, "The attempt is not part of the "
    "trace named.")
UNKNOWN_FILTER_VALUE: Final = _code("unknown_filter_value", 2, "A filter value is not one of the "
    "known values.")
INVALID_TIME: Final = _code("invalid_time", 2, "A time option is neither an ISO time nor an age "
    "like 24h.")
INVALID_SET: Final = _code("invalid_set", 2, "A --set is not FIELD=VALUE.")
UNKNOWN_FIELD: Final = _code("unknown_field", 2, "The template has no such field.")
EMPTY_VALUE: Final = _code("empty_value", 2, "A review value is blank (blank is UNKNOWN already).")
VALUE_TOO_LONG: Final = _code("value_too_long", 2, "A review value is longer than the limit.")
UNKNOWN_EVIDENCE: Final = _code("unknown_evidence", 2, "Cited evidence positions are not events "
    "of this trace.")
REVIEWER_REQUIRED: Final = _code("reviewer_required", 2, "The action records who did it: "
    "--reviewer NAME is required.")
INVALID_REVIEWER: Final = _code("invalid_reviewer", 2, "A reviewer name is not printable text "
    "within the limit.")
INVALID_TEMPLATE: Final = _code("invalid_template", 2, "A template file is not valid.")
INVALID_TEMPLATE_NAME: Final = _code("invalid_template_name", 2, "A template name does not match "
    "the allowed pattern.")
INVALID_VERDICT: Final = _code("invalid_verdict", 2, "A verdict is neither accept nor reject.")
INVALID_EVIDENCE_KIND: Final = _code("invalid_evidence_kind", 2, "An evidence kind does not match "
    "the allowed pattern.")
RECEIPT_TOO_LARGE: Final = _code("receipt_too_large", 2, "An evidence receipt is larger than the "
    "limit.")
INVALID_SETTING: Final = _code("invalid_setting", 2, "A setting value is not one of the allowed "
    "words.")
REVIEWER_NOT_INDEPENDENT: Final = _code("reviewer_not_independent", 5, "An approver cannot also "
    "fill the record.")
ALREADY_APPROVED: Final = _code("already_approved", 5, "The reviewer has already approved this "
    "record.")
EVIDENCE_REQUIRED: Final = _code("evidence_required", 5, "A value the events cannot derive needs "
    "cited evidence.")
EVIDENCE_KIND_MISMATCH: Final = _code("evidence_kind_mismatch", 5, "The cited evidence cannot "
    "prove the value.")
FIELD_NEEDS_APPROVAL: Final = _code("field_needs_approval", 5, "The field is filled by approvals "
    "(use --approve).")
CONFLICT_UNRESOLVED: Final = _code("conflict_unresolved", 5, "A CONFLICT stands: resolve it or "
    "approve with --override-reason.")
RECORD_CHANGED: Final = _code("record_changed", 5, "The record changed since it was read (its "
    "digest differs).")
SEMANTIC_NOT_BY_REVIEWER: Final = _code("semantic_not_by_reviewer", 5, "The trace's task rule "
    "does not take a person's verdict.")
VERDICT_NOT_AWAITED: Final = _code("verdict_not_awaited", 5, "The attempt is not awaiting a "
    "reviewer's verdict.")
SIGNATURE_REQUIRED: Final = _code("signature_required", 5, "The store has registered reviewer "
    "keys: the review must be signed.")
REVIEWER_KEY_UNKNOWN: Final = _code("reviewer_key_unknown", 5, "The signing key is not a "
    "registered reviewer key.")
REVIEWER_KEY_MISMATCH: Final = _code("reviewer_key_mismatch", 5, "The signing key is registered "
    "to another reviewer.")
KEY_ALREADY_REGISTERED: Final = _code("key_already_registered", 5, "The key is already "
    "registered.")
REGISTRATION_SIGNATURE_REQUIRED: Final = _code("registration_signature_required", 5, "The "
    "store has reviewers: a new registration must be signed by an admin's key (--by-key).")
REGISTRATION_NOT_AUTHORIZED: Final = _code("registration_not_authorized", 5, "The key that "
    "signed the registration is not a registered admin's.")
