"""Stable codes: release statuses, reason codes, decision notes and audit violations.

These strings are stored in ``release.decided`` events and matched by scripts, so they are
part of the public contract: never rename one, add a new one instead.  Each is described
in ``DESCRIPTIONS`` (the CLI and ``docs/release-policy.md`` show the same sentences) and a
test checks that every constant here is documented there.
"""

from __future__ import annotations

from typing import Final

#: Version of the release policy implemented by :mod:`tracestore.projections.release`.
#: Recorded in every ``release.decided`` event so a later policy change is visible.
POLICY_VERSION: Final = "seed003-v1"

# --- statuses -------------------------------------------------------------------------
RELEASED: Final = "released"
PENDING: Final = "pending"
STOPPED: Final = "stopped"
SUPERSEDED: Final = "superseded"
INTERRUPTED: Final = "interrupted"
LIMITED: Final = "limited"
FAILED: Final = "failed"
REJECTED: Final = "rejected"
HELD: Final = "held"
INCOMPLETE: Final = "incomplete"
REFUSED: Final = "refused"

STATUSES: Final = (RELEASED, PENDING, STOPPED, SUPERSEDED, INTERRUPTED, LIMITED, FAILED,
                   REJECTED, HELD, INCOMPLETE, REFUSED)

# --- reasons: why an attempt was released -----------------------------------------------
NORMAL_NATIVE_ENDING: Final = "normal_native_ending"
CLEAN_DRAIN: Final = "clean_drain"
SEMANTIC_ACCEPTED: Final = "semantic_accepted"

# --- reasons: why it is still pending --------------------------------------------------
AWAITING_NATIVE_TERMINAL: Final = "awaiting_native_terminal"
AWAITING_DRAIN: Final = "awaiting_drain"
# the task rule says a reviewer decides semantic acceptance
AWAITING_REVIEWER_VERDICT: Final = "awaiting_reviewer_verdict"

# --- reasons: why it was not released --------------------------------------------------
LOCAL_STOP_BEFORE_RELEASE: Final = "local_stop_before_release"
SUPERSEDED_BY_NEWER_ATTEMPT: Final = "superseded_by_newer_attempt"
NATIVE_EXCEPTION: Final = "native_exception"
EXCEPTION_BEFORE_DRAIN: Final = "exception_before_drain"
UNKNOWN_EXCEPTION: Final = "unknown_exception"
NATIVE_FAILURE: Final = "native_failure"
NATIVE_LIMIT_REACHED: Final = "native_limit_reached"
# a provider's own refusal: a safety stop of the answer, or the prompt blocked before one
NATIVE_REFUSAL: Final = "native_refusal"
PROMPT_BLOCKED: Final = "prompt_blocked"
NO_NATIVE_TERMINAL: Final = "no_native_terminal"
DRAIN_EOF: Final = "drain_eof"
DRAIN_ERROR: Final = "drain_error"
DRAIN_RESET: Final = "drain_reset"
SEMANTIC_REJECTED: Final = "semantic_rejected"
NO_SEMANTIC_RULE: Final = "no_semantic_rule"
TOOL_USE_NOT_ALLOWED: Final = "tool_use_not_allowed"
UNEXPECTED_TEXT_BLOCK: Final = "unexpected_text_block"
NON_TEXT_CONTENT: Final = "non_text_content"
UNKNOWN_NATIVE_FORM: Final = "unknown_native_form"
UNKNOWN_STOP_REASON: Final = "unknown_stop_reason"
DUPLICATE_TERMINAL: Final = "duplicate_terminal"
CONTENT_AFTER_TERMINAL: Final = "content_after_terminal"
FINAL_TEXT_MISMATCH: Final = "final_text_mismatch"
DUPLICATE_FINAL_TEXT: Final = "duplicate_final_text"
METADATA_MISSING: Final = "metadata_missing"
NO_PROFILE: Final = "no_profile"
EMPTY_ANSWER: Final = "empty_answer"
INLINE_REASONING_TEXT: Final = "inline_reasoning_text"
# robustness: a task-rule pattern ran past its time bound on this answer
RULE_TIMEOUT: Final = "rule_timeout"

# --- structured answers (seeds 000 and 004): released / not released ---------------------
CONTRACT_ACCEPTED: Final = "contract_accepted"
NO_CONTRACT: Final = "no_contract"
NO_REQUEST_BINDING: Final = "no_request_binding"
# reply failures; a contract may use seed 000's or seed 004's name for the same kind
INVALID_JSON: Final = "invalid_json"
INVALID_ANSWER_JSON: Final = "invalid_answer_json"
DUPLICATE_JSON_KEY: Final = "duplicate_json_key"
INVALID_JSON_CONSTANT: Final = "invalid_json_constant"
JSON_TOO_DEEP: Final = "json_too_deep"
INVALID_SCHEMA: Final = "invalid_schema"
INVALID_ANSWER_SCHEMA: Final = "invalid_answer_schema"
UNKNOWN_VERSION: Final = "unknown_version"
TOO_LARGE: Final = "too_large"
UNKNOWN_CONTEXT_CITATION: Final = "unknown_context_citation"
UNTRUSTED_VALUE: Final = "untrusted_value"
STATUS_CITATION_MISMATCH: Final = "status_citation_mismatch"
# seed 000's application frames
INVALID_FRAME_JSON: Final = "invalid_frame_json"
TRUNCATED_FRAME: Final = "truncated_frame"
TRUNCATED_UTF8: Final = "truncated_utf8"
INVALID_FRAME_SCHEMA: Final = "invalid_frame_schema"
INVALID_SEQUENCE: Final = "invalid_sequence"
FRAME_REQUEST_MISMATCH: Final = "frame_request_mismatch"
INVALID_CONTENT_DELTA: Final = "invalid_content_delta"
INVALID_TERMINAL_REASON: Final = "invalid_terminal_reason"
FRAME_AFTER_TERMINAL: Final = "frame_after_terminal"
FRAME_BYTE_LIMIT: Final = "frame_byte_limit"
STREAM_BYTE_LIMIT: Final = "stream_byte_limit"
CONTENT_LIMIT: Final = "content_limit"
FRAME_COUNT_LIMIT: Final = "frame_count_limit"
CONTROLLED_LOCAL_CANCEL: Final = "controlled_local_cancel"
CONTROLLED_LOCAL_ERROR: Final = "controlled_local_error"
MISSING_TERMINAL: Final = "missing_terminal"
TRANSPORT_IO_ERROR: Final = "transport_io_error"
# seed 004's endpoint events
UNKNOWN_EVENT_KIND: Final = "unknown_event_kind"
EMPTY_CHUNK: Final = "empty_chunk"
EVENT_AFTER_TERMINAL: Final = "event_after_terminal"
ENDPOINT_ERROR: Final = "endpoint_error"

# seed rules 000/003/004: binding consistency, invalid bytes, envelope
RECORDED_REQUEST_MISMATCH: Final = "recorded_request_mismatch"
RECORDED_CONTEXT_MISMATCH: Final = "recorded_context_mismatch"
BINDING_CORPUS_MISMATCH: Final = "binding_corpus_mismatch"
INVALID_UTF8: Final = "invalid_utf8"
PRELUDE_CRC_MISMATCH: Final = "prelude_crc_mismatch"
MESSAGE_CRC_MISMATCH: Final = "message_crc_mismatch"

# --- agent runs (seed 001, tracestore/agent): reasons ----------------------------------
AWAITING_RUN_FINISH: Final = "awaiting_run_finish"
ADMISSION_AGREES: Final = "admission_agrees"
RUN_FAILED: Final = "run_failed"
# seed 001's own codes (run reasons, refusal codes, findings) are release reasons and audit
# violations too; they are defined, described and documented once, in tracestore.agent.codes.
from tracestore.agent.codes import (  # noqa: E402, F401 - re-exported as release reasons
    ADMISSION_DISAGREEMENT, CITATION_CONTRACT_PASSED, DEADLINE, MODEL_CALL_LIMIT,
    MODEL_STOPPED, READ_OR_BYTE_LIMIT, SEARCH_LIMIT,
)
from tracestore.agent.codes import DESCRIPTIONS as _AGENT_DESCRIPTIONS  # noqa: E402

# --- notes: facts worth a reviewer's eye that do not change the decision ---------------
METADATA_ABSENT: Final = "metadata_absent"
STOP_AFTER_RELEASE: Final = "stop_after_release"
SUPERSEDED_AFTER_DECISION: Final = "superseded_after_decision"
FRAMES_AFTER_DECISION: Final = "frames_after_decision"
GRAPHEME_SPLIT: Final = "grapheme_split"

# --- audit violations ------------------------------------------------------------------
INELIGIBLE_TEXT_IN_DESTINATION: Final = "ineligible_text_in_destination"
DUPLICATE_HISTORY_ENTRY: Final = "duplicate_history_entry"
REPEATED_DESTINATION_WRITE: Final = "repeated_destination_write"
OLD_ATTEMPT_TEXT_IN_ANSWER: Final = "old_attempt_text_in_answer"
SHOWN_BEFORE_RELEASE: Final = "shown_before_release"
ANSWER_MISMATCH: Final = "answer_mismatch"
PROGRESS_NOT_FIXED: Final = "progress_not_fixed"
READBACK_MISMATCH: Final = "readback_mismatch"
# T8's own failure mode: a frame out of its provider's stream grammar
CONTENT_BEFORE_START: Final = "content_before_start"
SECOND_MESSAGE_START: Final = "second_message_start"
SEQUENCE_NUMBER_REGRESSED: Final = "sequence_number_regressed"
# a Responses stream resumed on a second connection whose first event does not follow the
# first connection's last sequence_number
RESUME_SEQUENCE_GAP: Final = "resume_sequence_gap"
RESUME_SEQUENCE_OVERLAP: Final = "resume_sequence_overlap"

# a write recorded on one attempt holding another attempt's text; a partial
# answer shown as cut off that is not what the policy allows
MISATTRIBUTED_DESTINATION_WRITE: Final = "misattributed_destination_write"
CUT_OFF_WRITE_NOT_ALLOWED: Final = "cut_off_write_not_allowed"

# seed 003: a released answer that never reached a required destination
MISSING_DESTINATION_WRITE: Final = "missing_destination_write"

DESCRIPTIONS: Final[dict[str, str]] = {
    # statuses
    RELEASED: "The answer met every release condition and went to the destinations once.",
    PENDING: "Not decided yet: the log does not (yet) hold a deciding event.",
    STOPPED: "A local Stop came before the answer was released; late events cannot release it.",
    SUPERSEDED: "A newer attempt of the same trace was opened before this one was decided.",
    INTERRUPTED: "The stream broke off: a native exception or a transport end without a "
                 "normal native ending.",
    LIMITED: "The native ending was a limit (e.g. max_tokens); a fluent partial is not accepted.",
    FAILED: "The provider reported failure (failed terminal or error event).",
    REJECTED: "The stream ended normally and drained cleanly, but the answer failed the "
              "task's semantic rule.",
    HELD: "Something outside the profile or policy was seen; a person must review it.",
    REFUSED: "The provider refused: a safety stop ended the answer, or the prompt was "
             "blocked before any answer; nothing is released.",
    # released
    NORMAL_NATIVE_ENDING: "The native terminal is one the profile calls normal.",
    CLEAN_DRAIN: "The transport drained cleanly after the native ending.",
    SEMANTIC_ACCEPTED: "The answer matched every answer pattern and no forbidden pattern.",
    # pending
    AWAITING_NATIVE_TERMINAL: "No native terminal has been observed yet.",
    AWAITING_DRAIN: "No transport drain has been observed yet.",
    # not released
    LOCAL_STOP_BEFORE_RELEASE: "The user or application stopped this attempt before release.",
    SUPERSEDED_BY_NEWER_ATTEMPT: "A newer attempt on the same trace was opened first.",
    NATIVE_EXCEPTION: "A native exception arrived before any normal native ending.",
    EXCEPTION_BEFORE_DRAIN: "A native exception arrived after the normal ending but before "
                            "the clean drain.",
    UNKNOWN_EXCEPTION: "A native error whose name the profile does not know.",
    NATIVE_FAILURE: "A failure terminal (response.failed) or failure error event.",
    NATIVE_LIMIT_REACHED: "The native stop reason is a limit (max_tokens, max_output_tokens).",
    NATIVE_REFUSAL: "The native stop reason is one the profile calls a refusal (a Gemini "
                    "safety, recitation, blocklist, prohibited-content or personal-data stop).",
    PROMPT_BLOCKED: "The provider blocked the prompt and generated no answer (Gemini "
                    "promptFeedback.blockReason without candidates).",
    NO_NATIVE_TERMINAL: "The transport ended without any native terminal.",
    DRAIN_EOF: "The transport ended by EOF (not a clean drain).",
    DRAIN_ERROR: "The transport ended with an error.",
    DRAIN_RESET: "The transport was reset.",
    SEMANTIC_REJECTED: "The answer failed the task's semantic rule.",
    NO_SEMANTIC_RULE: "The trace carries no semantic rule, so no answer can be accepted.",
    # bounded task-rule patterns
    RULE_TIMEOUT: "A task-rule pattern ran past its time bound on this answer (catastrophic "
                  "backtracking); the answer is neither accepted nor rejected: held.",
    TOOL_USE_NOT_ALLOWED: "A tool call (or tool_use stop reason) in a profile without tools; "
                          "never dispatched, never stringified into the answer.",
    UNEXPECTED_TEXT_BLOCK: "More text blocks than the profile allows.",
    NON_TEXT_CONTENT: "Non-text content the profile excludes: reasoning in any form (text, "
                      "signature, redacted or encrypted) or a non-text block.",
    UNKNOWN_NATIVE_FORM: "A native event the normalizer did not recognise.",
    UNKNOWN_STOP_REASON: "A native terminal the profile neither calls normal, limited nor failed.",
    DUPLICATE_TERMINAL: "A second native terminal for the same attempt.",
    CONTENT_AFTER_TERMINAL: "Content arrived after the native terminal.",
    FINAL_TEXT_MISMATCH: "A source final text disagrees with the text assembled from deltas.",
    DUPLICATE_FINAL_TEXT: "The same source final-text event arrived twice for one block.",
    METADATA_MISSING: "The profile requires accounting metadata and none arrived.",
    NO_PROFILE: "No release profile fits this attempt's API, so nothing can be released.",
    EMPTY_ANSWER: "The stream ended normally but the candidate holds no text (empty or only "
                  "whitespace); the text profile needs one text block.",
    INLINE_REASONING_TEXT: "The answer text contains an inline reasoning tag (<think>, "
                           "<thinking>, <reasoning>): reasoning written into the text "
                           "channel, which the profile does not release as the answer.",
    # structured answers
    CONTRACT_ACCEPTED: "The structured reply passed its output contract: strict JSON, "
                       "version, schema, bounds, cited ids from the bound context, links on "
                       "the allowlist, status/citation consistency.",
    NO_CONTRACT: "The profile's answer is structured but no output contract is bound to the "
                 "trace, so no reply can be judged.",
    NO_REQUEST_BINDING: "The reply cites context ids but no request binding was recorded, so "
                        "the citations cannot be checked (UNKNOWN, not checked).",
    INVALID_JSON: "The reply is not strict JSON (seed 004's name).",
    INVALID_ANSWER_JSON: "The reply is not strict JSON (seed 000's name).",
    DUPLICATE_JSON_KEY: "Detail of a JSON failure: an object repeats a key.",
    INVALID_JSON_CONSTANT: "Detail of a JSON failure: NaN, Infinity or -Infinity.",
    JSON_TOO_DEEP: "Detail of a JSON failure: nesting deeper than the contract's bound "
                   "(checked before parsing).",
    INVALID_SCHEMA: "The reply's fields, types or bounds break its version's schema "
                    "(seed 004's name).",
    INVALID_ANSWER_SCHEMA: "The reply's fields, types or bounds break the schema (seed 000's "
                           "name).",
    UNKNOWN_VERSION: "The reply's schema_version is missing, not an integer, or not one the "
                     "contract accepts.",
    TOO_LARGE: "The reply is larger than the contract's byte bound (checked before parsing: "
               "rejected, never cut).",
    UNKNOWN_CONTEXT_CITATION: "A cited id is not in the context bound to this request "
                              "(seed 000's name).",
    UNTRUSTED_VALUE: "A cited id is not in the bound context, or a link fails the URL rule "
                     "(https, no credentials, host exactly on the allowlist) (seed 004's name).",
    STATUS_CITATION_MISMATCH: "The status disagrees with the citations (answered needs one, "
                              "not_in_docs must have none).",
    INVALID_FRAME_JSON: "An application frame is not strict JSON; the frames before it stay "
                        "recorded.",
    TRUNCATED_FRAME: "An application frame stream ends inside a frame (no closing newline); "
                     "the frames before it stay recorded.",
    TRUNCATED_UTF8: "An application frame stream ends inside a UTF-8 character.",
    INVALID_FRAME_SCHEMA: "An application frame is not an object with exactly its kind's keys.",
    INVALID_SEQUENCE: "An application frame's sequence is not the next integer.",
    FRAME_REQUEST_MISMATCH: "An application frame is bound to another request (its "
                            "binding_sha256 differs from the recorded binding).",
    INVALID_CONTENT_DELTA: "A content_delta frame's text is empty, not text, or not valid "
                           "Unicode.",
    INVALID_TERMINAL_REASON: "An error/cancel frame's reason is empty, not text, or longer "
                             "than 256 characters.",
    FRAME_AFTER_TERMINAL: "An application frame arrived after the terminal frame.",
    FRAME_BYTE_LIMIT: "One application frame is larger than the profile's frame bound.",
    STREAM_BYTE_LIMIT: "The application frames together exceed the profile's byte bound.",
    CONTENT_LIMIT: "The provisional content exceeds the profile's character bound.",
    FRAME_COUNT_LIMIT: "More application frames than the profile allows.",
    CONTROLLED_LOCAL_CANCEL: "The application's producer ended the frames with a cancel "
                             "terminal; no answer is accepted.",
    CONTROLLED_LOCAL_ERROR: "The application's producer ended the frames with an error "
                            "terminal; no answer is accepted (app-frames' name for "
                            "native_failure).",
    MISSING_TERMINAL: "The frames ended without a terminal frame (app-frames' name for "
                      "no_native_terminal).",
    UNKNOWN_EVENT_KIND: "An endpoint event that is not chunk, done or error (seed 004's event "
                        "contract).",
    EMPTY_CHUNK: "An endpoint chunk event with no text.",
    EVENT_AFTER_TERMINAL: "An endpoint event after its done or error event (exactly one "
                          "terminal event).",
    ENDPOINT_ERROR: "The endpoint ended with an error event; its envelope's code says why "
                    "(faq-endpoint's name for native_failure).",
    TRANSPORT_IO_ERROR: "The transport failed while reading (app-frames' name for "
                        "drain_error); the partial trace is kept, never accepted.",
    # the seeds' rules
    RECORDED_REQUEST_MISMATCH: "The request binding's request_sha256 is not the digest of its "
                               "messages (seed 000: a binding is checked before use).",
    RECORDED_CONTEXT_MISMATCH: "The context the bound request supplied is not the binding's "
                               "selected context.",
    BINDING_CORPUS_MISMATCH: "A selected passage of the binding is not from the bound corpus "
                             "(its chunk id is not the corpus's, or not its text and URL): "
                             "no citation resolves to a URL the binding injected.",
    INVALID_UTF8: "A recognized stream turned invalid at a byte that is not UTF-8: the frames "
                  "before it are kept as evidence, the rejection at its byte offset, never "
                  "released.",
    PRELUDE_CRC_MISMATCH: "An AWS event-stream message's prelude CRC32 does not match: the "
                          "messages before it are kept, the attempt is not released.",
    MESSAGE_CRC_MISMATCH: "An AWS event-stream message's CRC32 does not match: the messages "
                          "before it are kept, the attempt is not released.",
    # notes
    METADATA_ABSENT: "No usage/metadata was observed; recorded as absent, never as zero.",
    STOP_AFTER_RELEASE: "A Stop arrived after the release; it does not undo it.",
    SUPERSEDED_AFTER_DECISION: "A newer attempt was opened after this one was decided.",
    FRAMES_AFTER_DECISION: "Native frames arrived after the decision; they changed nothing.",
    GRAPHEME_SPLIT: "A text delta begins inside a grapheme cluster (UAX #29: a Bangla "
                    "conjunct, a combining accent, an emoji ZWJ sequence): a display hazard "
                    "for a screen drawing deltas one by one; reassembly is lossless.",
    # violations
    INELIGIBLE_TEXT_IN_DESTINATION: "A destination holds text of an attempt that was not "
                                    "released.",
    DUPLICATE_HISTORY_ENTRY: "A second history entry for the same trace (turn); only a retry "
                             "released after the turn's answer was released may replace it.",
    REPEATED_DESTINATION_WRITE: "A destination (ui, export, copy) written twice for one attempt.",
    OLD_ATTEMPT_TEXT_IN_ANSWER: "Text of an older attempt appears in a newer attempt's "
                                "destination.",
    SHOWN_BEFORE_RELEASE: "An answer destination was written before the release position.",
    ANSWER_MISMATCH: "A destination holds text other than the released answer.",
    PROGRESS_NOT_FIXED: "A progress write whose text is not the fixed progress string.",
    READBACK_MISMATCH: "A destination, read back by the application, holds other text than "
                       "the released answer (or, before release, than the progress text).",
    CONTENT_BEFORE_START: "Content (a delta, a block, a tool call) arrived before the "
                          "stream's start frame (Bedrock messageStart, Anthropic "
                          "message_start, Responses response.created): a frame of another "
                          "stream, e.g. a late callback routed into the current attempt.",
    SECOND_MESSAGE_START: "A second start frame in one attempt: two streams' frames in one "
                          "attempt.",
    SEQUENCE_NUMBER_REGRESSED: "A Responses sequence_number did not increase: a frame of "
                               "another stream, or one replayed.",
    RESUME_SEQUENCE_GAP: "A resumed Responses stream's second connection starts after the "
                         "sequence_number that follows the first connection's last one: "
                         "events of the answer were never received.",
    RESUME_SEQUENCE_OVERLAP: "A resumed Responses stream's second connection replays a "
                             "sequence_number the first connection delivered, with other "
                             "content than the first's event of that number.",
    MISATTRIBUTED_DESTINATION_WRITE: "A write recorded on one attempt holds exactly another "
                                     "attempt's text: it is judged as that attempt's write.",
    CUT_OFF_WRITE_NOT_ALLOWED: "A write marked as cut off that the policy does not allow: "
                               "only a stopped attempt's partial text, after its Stop, on "
                               "the UI.",
    MISSING_DESTINATION_WRITE: "A released answer never reached a destination it must "
                               "(history: seed 003's one matching history entry), while the "
                               "application records its own destination writes.",
    # agent runs
    INCOMPLETE: "An agent run ended without an answer: the model stopped, or a limit or the "
                "deadline was reached.",
    AWAITING_RUN_FINISH: "The agent run has not finished yet (no run.finished event).",
    ADMISSION_AGREES: "Re-derived admission agrees with every verdict, the outcome, the usage "
                      "and the citations the run recorded.",
    RUN_FAILED: "The agent run failed; the next reason is seed 001's code.",
    # seed 001's codes (tracestore.agent.codes): run reasons, refusals, findings
    **_AGENT_DESCRIPTIONS,
    # a reviewer decides semantic acceptance ("semantic": "reviewer")
    AWAITING_REVIEWER_VERDICT: "The task's semantic acceptance is decided by a reviewer: a "
                               "reviewer's verdict (tracestore judge) is awaited.",
}
