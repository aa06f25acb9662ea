"""Seed 001's codes, as stable strings: decision validation, admission, run reasons, findings.

The decision and admission codes are seed 001's own (``validate_decision``, the controller's
``perform`` and ``check_citations``); tracestore adds only ``changed_read`` (its name for the
seed's "changed read" refusal, which the seed raises as an unnamed tool error) and the
finding codes, which say where a recorded run and its re-derivation disagree.  Every code is
described in ``DESCRIPTIONS`` and in ``docs/agent.md`` (a test checks both).
"""

from __future__ import annotations

from typing import Final

#: ``AttemptStarted.api`` of an agent run: no provider stream, so no seed 003 profile.
AGENT_API: Final = "agent-run"

# --- validate_decision -----------------------------------------------------------------
INVALID_DECISION: Final = "invalid_decision"
UNKNOWN_ACTION: Final = "unknown_action"
INVALID_CITATION: Final = "invalid_citation"
UNEXPECTED_ACTION_FIELDS: Final = "unexpected_action_fields"
INVALID_QUERY: Final = "invalid_query"
INVALID_SOURCE: Final = "invalid_source"
MISSING_ANSWER_EVIDENCE: Final = "missing_answer_evidence"

# --- admission of an action ------------------------------------------------------------
UNISSUED_SOURCE: Final = "unissued_source"
DUPLICATE_READ: Final = "duplicate_read"
DUPLICATE_QUERY: Final = "duplicate_query"
FIXED_POLICY_TOOL_REQUEST: Final = "fixed_policy_tool_request"
UNREAD_OR_CHANGED_CITATION: Final = "unread_or_changed_citation"
CHANGED_READ: Final = "changed_read"

# --- how a run ends (RunFinished.reason) ---------------------------------------------------
CITATION_CONTRACT_PASSED: Final = "citation_contract_passed"
MODEL_STOPPED: Final = "model_stopped"
SEARCH_LIMIT: Final = "search_limit"
READ_OR_BYTE_LIMIT: Final = "read_or_byte_limit"
DEADLINE: Final = "deadline"
MODEL_CALL_LIMIT: Final = "model_call_limit"

# --- findings: recorded run vs re-derivation -----------------------------------------------
ADMISSION_DISAGREEMENT: Final = "admission_disagreement"
OUTCOME_DISAGREEMENT: Final = "outcome_disagreement"
USAGE_DISAGREEMENT: Final = "usage_disagreement"
CITATION_DISAGREEMENT: Final = "citation_disagreement"
UNADMITTED_OBSERVATION: Final = "unadmitted_observation"
OBSERVATION_MISMATCH: Final = "observation_mismatch"
MISSING_OBSERVATION: Final = "missing_observation"
SEARCH_RESULT_NOT_METADATA: Final = "search_result_not_metadata"

VALIDATION_CODES: Final = (INVALID_DECISION, UNKNOWN_ACTION, INVALID_CITATION,
                           UNEXPECTED_ACTION_FIELDS, INVALID_QUERY, INVALID_SOURCE,
                           MISSING_ANSWER_EVIDENCE)
#: Limit reasons: the action was refused and the run ended ``incomplete``.
LIMIT_REASONS: Final = (SEARCH_LIMIT, READ_OR_BYTE_LIMIT, DEADLINE, MODEL_CALL_LIMIT)
#: Codes that refuse the decision itself (the run ends ``failed``).
REFUSAL_CODES: Final = (*VALIDATION_CODES, UNISSUED_SOURCE, DUPLICATE_READ, DUPLICATE_QUERY,
                        FIXED_POLICY_TOOL_REQUEST, UNREAD_OR_CHANGED_CITATION)

DESCRIPTIONS: Final[dict[str, str]] = {
    INVALID_DECISION: "The reply is not an object with exactly the six schema fields, a string "
                      "field is not a string or longer than 2000 characters, the assessment is "
                      "blank, or citations is not a list of at most 6.",
    UNKNOWN_ACTION: "The action is not one of search, read, answer, stop (e.g. shell).",
    INVALID_CITATION: "A citation is not exactly {source_id, quote} of non-blank strings of at "
                      "most 2000 characters.",
    UNEXPECTED_ACTION_FIELDS: "A field belonging to another action is filled (a query on a read, "
                              "an answer or citations on a search …).",
    INVALID_QUERY: "A search with a blank query.",
    INVALID_SOURCE: "A read without a source_id.",
    MISSING_ANSWER_EVIDENCE: "An answer with a blank answer text or no citations.",
    UNISSUED_SOURCE: "A read of a source id no admitted search issued.",
    DUPLICATE_READ: "A read of a source already read in this run.",
    DUPLICATE_QUERY: "A search whose normalized terms (lower-case [a-z0-9]+ words, as a set) "
                     "equal an earlier search's.",
    FIXED_POLICY_TOOL_REQUEST: "The fixed path asked the model to answer or stop; it asked for "
                               "a tool.",
    UNREAD_OR_CHANGED_CITATION: "A cited source was not read, its quote does not occur in the "
                                "read text, or that text does not match its text_sha256.",
    CHANGED_READ: "A read observation whose text does not match its text_sha256 (seed 001 "
                  "rejects changed passage text before it becomes an observation).",
    CITATION_CONTRACT_PASSED: "The run answered and every citation was read and quoted exactly.",
    MODEL_STOPPED: "The model chose stop: an explicit abstention, no answer.",
    SEARCH_LIMIT: "A search beyond the run's search allowance was refused before the backend.",
    READ_OR_BYTE_LIMIT: "A read beyond the read count or source-byte allowance was refused.",
    DEADLINE: "The run's seconds limit passed; no answer.",
    MODEL_CALL_LIMIT: "The model-call allowance ran out without an answer or stop.",
    ADMISSION_DISAGREEMENT: "The recorded run admitted (or refused) a decision that re-derived "
                            "admission refuses (or admits).",
    OUTCOME_DISAGREEMENT: "The recorded status/reason differ from the re-derived ones.",
    USAGE_DISAGREEMENT: "The recorded usage counters differ from the re-derived ones.",
    CITATION_DISAGREEMENT: "The recorded citations (or their URLs) differ from the answer's "
                           "citations with URLs taken from the read records.",
    UNADMITTED_OBSERVATION: "A tool observation that no admitted decision asked for.",
    OBSERVATION_MISMATCH: "The next observation is not the tool call the admitted decision "
                          "asked for.",
    MISSING_OBSERVATION: "An admitted tool call has no observation though the run did not fail.",
    SEARCH_RESULT_NOT_METADATA: "A search observation carries more than candidate metadata "
                                "(source_id, rank, version); only read returns text.",
}

#: The recorded reasons for which re-derivation trusts the record: the reply or the tool
#: error was never recorded (a transport failure, an invalid reply), so nothing contradicts it.
UNRECORDED_FAILURE_PREFIXES: Final = ("model_transport_failed", "unfinished_model_reply",
                                      "provider_", "batch_request_limit", "replay_",
                                      "missing_api_key", *VALIDATION_CODES)
