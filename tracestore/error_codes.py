"""The one registry of error codes: every code tracestore raises or writes in a JSON error.

Each ``ErrorCode`` has its stable ``code`` (what scripts match on), the ``exit_code`` of the
CLI when it ends a command (``None``: an HTTP error body of ``tracestore proxy``), one
sentence saying what it means, and the ``aliases`` it replaced: old names of the same
meaning, still written in JSON errors (``"aliases": [...]``) for one release so scripts
that matched them keep a way to match.  Release reasons (``projections/reasons.py``,
docs/release-policy.md) are a different vocabulary and are not here.

tests/test_error_codes.py reads the source (``ast``) for every code raised or written in a
JSON error and fails on one that is not registered, and checks docs/errors.md against
``markdown_table()`` (regenerate with ``python -m tracestore.error_codes``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class ErrorCode:
    code: str
    exit_code: int | None
    meaning: str
    aliases: tuple[str, ...] = ()


def _code(code: str, exit_code: int | None, meaning: str,
          aliases: tuple[str, ...] = ()) -> ErrorCode:
    return ErrorCode(code, exit_code, meaning, aliases)


# -- generic: the class defaults (raised only when no specific code applies) -----------------
TRACESTORE_ERROR: Final = _code("tracestore_error", 1, "Something tracestore refused that has no "
    "more specific code (the base of every tracestore error).")
INVALID_INPUT: Final = _code("invalid_input", 2, "The input (a file, JSON, option or scenario) is "
    "not acceptable, with no more specific code.")
WIRE_ERROR: Final = _code("wire_error", 2, "Bytes that do not decode as the expected framing, "
    "with no more specific code.")
STORE_ERROR: Final = _code("store_error", 3, "The event store refused an operation, with no more "
    "specific code.")
REVIEW_REFUSED: Final = _code("review_refused", 5, "The review record refuses the action, with no "
    "more specific code.")
RECORDING_SCOPE: Final = _code("recording_scope", 2, "A turn scope or attempt handle was used in "
    "a way that would make the trace ambiguous.")

# -- command line ----------------------------------------------------------------------------
USAGE_ERROR: Final = _code("usage_error", 2, "The command line does not parse (an unknown option, "
    "a missing argument, a bad choice); printed by the argument parser.")
INVALID_ARGUMENT: Final = _code("invalid_argument", 2, "A command-line id or name is not UTF-8 "
    "text.")
INVALID_OPTION: Final = _code("invalid_option", 2, "Options that do not go together, or an option "
    "value out of its range.")
MISSING_OPTION: Final = _code("missing_option", 2, "A required option is missing (for example "
    "--html FILE).")
MISSING_DEPENDENCY: Final = _code("missing_dependency", 2, "An optional extra is not installed "
    "(for example tracestore[proxy]).")

# -- files and input bytes -------------------------------------------------------------------
FILE_ERROR: Final = _code("file_error", 2, "The operating system refused to read or write a named "
    "file (the message says why).")
FILE_NOT_FOUND: Final = _code("file_not_found", 2, "No file was found at the paths given.")
NOT_A_FILE: Final = _code("not_a_file", 2, "The path names a directory, not a file.")
INPUT_TOO_LARGE: Final = _code("input_too_large", 2, "An input file is larger than its limit.")
EMPTY_INPUT: Final = _code("empty_input", 2, "The input is empty.")
INVALID_UTF8: Final = _code("invalid_utf8", 2, "Text input is not valid UTF-8.")
INVALID_JSON: Final = _code("invalid_json", 2, "Input that must be strict JSON is not.")
JSON_TOO_DEEP: Final = _code("json_too_deep", 2, "JSON nests deeper than the limit.")
NUMBER_OUT_OF_RANGE: Final = _code("number_out_of_range", 2, "A JSON number is outside the range "
    "tracestore stores exactly.")
DUPLICATE_JSON_KEY: Final = _code("duplicate_json_key", 2, "A JSON object repeats a key (strict "
    "JSON refuses it).")
INVALID_JSON_CONSTANT: Final = _code("invalid_json_constant", 2, "JSON holds NaN or Infinity, "
    "which strict JSON refuses.")
INVALID_SHAPE: Final = _code("invalid_shape", 2, "A JSON element has the wrong shape (not an "
    "object where one is needed).")
INVALID_IDENTIFIER: Final = _code("invalid_identifier", 2, "An id or name is empty or not "
    "printable text.")
UNSTORABLE_VALUE: Final = _code("unstorable_value", 2, "A value cannot be stored as JSON.")

# -- wire framing ----------------------------------------------------------------------------
TRUNCATED_FRAME: Final = _code("truncated_frame", 2, "The capture ends in the middle of a frame.")
TRUNCATED_UTF8: Final = _code("truncated_utf8", 2, "The capture ends in the middle of a UTF-8 "
    "character.")
FRAME_BYTE_LIMIT: Final = _code("frame_byte_limit", 2, "A frame is larger than the per-frame byte "
    "limit.")
FRAME_COUNT_LIMIT: Final = _code("frame_count_limit", 2, "A capture holds more frames than the "
    "limit.")
LABEL_COUNT_LIMIT: Final = _code("label_count_limit", 2, "A projection holds more local labels "
    "than the limit.")
DECODER_CLOSED: Final = _code("decoder_closed", 2, "Bytes were fed to a decoder that was already "
    "closed.")
INVALID_JSON_ARRAY: Final = _code("invalid_json_array", 2, "A JSON-array capture is not a "
    "well-formed array.")
TRAILING_DATA: Final = _code("trailing_data", 2, "Data follows the closing bracket of a "
    "JSON-array capture.")
INVALID_PRELUDE: Final = _code("invalid_prelude", 2, "An AWS event-stream message declares "
    "impossible lengths.")
PRELUDE_CRC_MISMATCH: Final = _code("prelude_crc_mismatch", 2, "An AWS event-stream prelude CRC32 "
    "does not match.")
MESSAGE_CRC_MISMATCH: Final = _code("message_crc_mismatch", 2, "An AWS event-stream message CRC32 "
    "does not match.")
INVALID_HEADER: Final = _code("invalid_header", 2, "An AWS event-stream header is malformed or "
    "repeated.")
MISSING_HEADER: Final = _code("missing_header", 2, "An AWS event-stream message lacks a required "
    "header.")
UNKNOWN_MESSAGE_TYPE: Final = _code("unknown_message_type", 2, "An AWS event-stream message type "
    "is not event, exception or error.")
UNSUPPORTED_FRAME: Final = _code("unsupported_frame", 2, "A frame type no normalizer handles.")
UNKNOWN_FRAMING: Final = _code("unknown_framing", 2, "The framing named is not one tracestore "
    "decodes.")

# -- providers, captures, projections --------------------------------------------------------
UNKNOWN_PROVIDER: Final = _code("unknown_provider", 2, "The provider is unknown, or cannot be "
    "told from the capture's first events.")
UNKNOWN_API: Final = _code("unknown_api", 2, "The API of an attempt cannot be told; pass it "
    "explicitly.")
MIXED_APIS: Final = _code("mixed_apis", 2, "One attempt holds native events of more than one API.")
API_MISMATCH: Final = _code("api_mismatch", 2, "The bytes are events of another API than the "
    "attempt was opened for.")
UNKNOWN_LABEL: Final = _code("unknown_label", 2, "A projection element holds a local label other "
    "than stop or drain.")
UNKNOWN_ORIGIN: Final = _code("unknown_origin", 2, "The --origin value is not one of the known "
    "origins.")
ORIGIN_MISMATCH: Final = _code("origin_mismatch", 2, "The --origin does not fit the input (for "
    "example capture for decoded JSON events).")
INVALID_EVENT: Final = _code("invalid_event", 2, "An event does not validate against its schema.")

# -- task rules, contracts, bindings ---------------------------------------------------------
INVALID_TASK: Final = _code("invalid_task", 2, "A task rule file is not a valid task rule.")
INVALID_PATTERN: Final = _code("invalid_pattern", 2, "A semantic pattern is not a valid regular "
    "expression.")
UNSAFE_PATTERN: Final = _code("unsafe_pattern", 2, "A semantic pattern could backtrack "
    "catastrophically (a repeated repeated group).")
INVALID_CONTRACT: Final = _code("invalid_contract", 2, "An output contract is not valid.")
INVALID_REGRESSION_CASE: Final = _code("invalid_regression_case", 2, "A contract regression case "
    "file is not valid.")
INVALID_BINDING: Final = _code("invalid_binding", 2, "A request binding is not valid (shape, size "
    "or strict JSON).")
RECORDED_REQUEST_MISMATCH: Final = _code("recorded_request_mismatch", 2, "A binding's "
    "request_sha256 is not the digest of its messages.")
RECORDED_CONTEXT_MISMATCH: Final = _code("recorded_context_mismatch", 2, "The context the request "
    "supplied is not the binding's selected context.")
BINDING_CORPUS_MISMATCH: Final = _code("binding_corpus_mismatch", 2, "A selected context chunk is "
    "not in the bound corpus.")

# -- the store -------------------------------------------------------------------------------
NO_STORE: Final = _code("no_store", 4, "No tracestore store exists at the --db given (read-only "
    "commands never create one).")
MEMORY_DB_REFUSED: Final = _code("memory_db_refused", 2, "The CLI refuses --db sqlite://, an "
    "in-memory database: nothing would be kept.")
INVALID_DB_URL: Final = _code("invalid_db_url", 2, "The database URL does not parse or names an "
    "impossible port.")
DRIVER_MISSING: Final = _code("driver_missing", 3, "The database driver for the URL is not "
    "installed.")
DATABASE_UNAVAILABLE: Final = _code("database_unavailable", 3, "The database cannot be opened.")
NOT_OUR_DATABASE: Final = _code("not_our_database", 3, "The database holds tables that are not a "
    "tracestore event log.")
SCHEMA_TOO_NEW: Final = _code("schema_too_new", 3, "The database schema is newer than this "
    "tracestore.")
SCHEMA_NOT_CURRENT: Final = _code("schema_not_current", 3, "The database schema is older and a "
    "read-only command cannot upgrade it.")
SCHEMA_INCOMPLETE: Final = _code("schema_incomplete", 3, "The database lacks tables or views the "
    "schema revision promises.")
MIGRATIONS_MISSING: Final = _code("migrations_missing", 3, "The migrations are missing from this "
    "installation.")
STORE_DAMAGED: Final = _code("store_damaged", 3, "The database file is damaged.")
APPEND_REFUSED: Final = _code("append_refused", 3, "The database refused an append.")
EXPECTED_VERSION_CONFLICT: Final = _code("expected_version_conflict", 3, "An append carried a "
    "stale expected stream version (another writer appended first).")
CHAIN_BROKEN: Final = _code("chain_broken", 3, "The hash chain does not verify; position names "
    "the first broken event.")
REVIEW_SIGNATURE_INVALID: Final = _code("review_signature_invalid", 3, "A review event's "
    "signature does not hold.")
POSITION_OUT_OF_RANGE: Final = _code("position_out_of_range", 2, "A position option is outside "
    "the range of positions.")

# -- lookups ---------------------------------------------------------------------------------
ATTEMPT_NOT_FOUND: Final = _code("attempt_not_found", 4, "No such attempt (or agent run) in the "
    "log.",
    aliases=("unknown_attempt", "not_found"))
TRACE_NOT_FOUND: Final = _code("trace_not_found", 4, "No such trace in the log.")
NO_AGENT_RUNS: Final = _code("no_agent_runs", 4, "The log holds no agent runs.")
TEMPLATES_MISSING: Final = _code("templates_missing", 4, "No review templates directory was "
    "found.")
UNKNOWN_TEMPLATE: Final = _code("unknown_template", 4, "No review template of that name.")

# -- ingest, replay, recording ---------------------------------------------------------------
ATTEMPT_EXISTS: Final = _code("attempt_exists", 2, "The attempt is already in the log; an attempt "
    "is recorded once.")
TRACE_CONFLICT: Final = _code("trace_conflict", 2, "The trace already exists with another task "
    "rule or origin.")
REPLAY_CONFLICT: Final = _code("replay_conflict", 3, "Planned events were already stored by "
    "someone else.")
DECISION_CONFLICT: Final = _code("decision_conflict", 3, "A trace's decisions could not be "
    "recorded: its rule or bindings kept changing.")
INVALID_SCENARIO: Final = _code("invalid_scenario", 2, "A scenario file does not validate.")
CAPTURE_PATH_ESCAPES: Final = _code("capture_path_escapes", 2, "A scenario capture path is "
    "absolute or leaves the scenario's folder.")
ATTEMPT_CLOSED: Final = _code("attempt_closed", 2, "The attempt is drained and takes no more "
    "events.")
NOT_STARTED: Final = _code("not_started", 2, "The attempt's API is not known yet (nothing was "
    "recorded for it).")
UNKNOWN_DRAIN: Final = _code("unknown_drain", 2, "A drain outcome is not one of the known "
    "outcomes.")
UNKNOWN_DESTINATION: Final = _code("unknown_destination", 2, "A destination is not one of the "
    "known application destinations.")
INVALID_TEXT: Final = _code("invalid_text", 2, "A destination text is not text.")
CUT_OFF_NOT_UI: Final = _code("cut_off_not_ui", 2, "Only a ui write can be shown as cut off.")
INVALID_REQUEST: Final = _code("invalid_request", 2, "Request settings are not JSON values.")
AMBIGUOUS_TURN: Final = _code("ambiguous_turn", 2, "Nested turn scopes, or a turn and a transport "
    "naming other traces.")
FOREIGN_ATTEMPT: Final = _code("foreign_attempt", 2, "An attempt handle of another recorder or "
    "store.")
NOT_RECORDED: Final = _code("not_recorded", 2, "An object no recording transport produced.")
RECORDING_FAILED: Final = _code("recording_failed", 3, "Recording an attempt failed; the "
    "application's stream went on.")
RECORDING_LAGGED: Final = _code("recording_lagged", 3, "The store fell too far behind a recorded "
    "attempt; recording it stopped.")
PROCESS_WRITER_UNAVAILABLE: Final = _code("process_writer_unavailable", 2, "A process writer "
    "(writer='process') was given an in-memory store, which its writer process cannot open.")
RECORDER_PROCESS_DIED: Final = _code("recorder_process_died", 3, "The recorder's writer process "
    "exited or its journal could not be written; recording stopped, the application's streams "
    "went on.")

# -- agent runs ------------------------------------------------------------------------------
UNKNOWN_FORMAT: Final = _code("unknown_format", 2, "The --format is not one of the known run "
    "formats.")
UNKNOWN_RUN_SHAPE: Final = _code("unknown_run_shape", 2, "The file is not an agent run result.")
INVALID_RUN: Final = _code("invalid_run", 2, "An agent run result holds an invalid value (status, "
    "mode, reason).")
INVALID_QUESTION: Final = _code("invalid_question", 2, "An agent run's question is blank or too "
    "long.")
INVALID_VERSION: Final = _code("invalid_version", 2, "An agent run's version is not MAJOR.MINOR.")
INVALID_LIMITS: Final = _code("invalid_limits", 2, "An agent run's limits are not integers in "
    "range.")
INVALID_OBSERVATION: Final = _code("invalid_observation", 2, "An agent run observation is not a "
    "tool call with arguments and result.")
NON_OBJECT_DECISION: Final = _code("non_object_decision", 2, "An agent decision is not a JSON "
    "object.")
UNKNOWN_PROPOSAL: Final = _code("unknown_proposal", 2, "No proposal of that index in the run.")
INVALID_CASES: Final = _code("invalid_cases", 2, "A grading cases file is not a list of cases.")

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

# -- keys and checkpoints --------------------------------------------------------------------
INVALID_KEY: Final = _code("invalid_key", 2, "A key file is not the Ed25519 PEM key needed.")
KEY_EXISTS: Final = _code("key_exists", 2, "A signing key file already exists and is never "
    "overwritten.")
KEY_UNREADABLE: Final = _code("key_unreadable", 2, "A key file cannot be read.")
CHECKPOINT_KEY_REQUIRED: Final = _code("checkpoint_key_required", 2, "No checkpoint key was given "
    "(--key FILE or the environment variable).")
INVALID_CHECKPOINT: Final = _code("invalid_checkpoint", 2, "A checkpoint file is not a signed "
    "head.")
CHECKPOINT_SIGNATURE_INVALID: Final = _code("checkpoint_signature_invalid", 3, "The checkpoint "
    "was not signed by the key (or was edited after signing).")

# -- export and import -----------------------------------------------------------------------
INVALID_EXPORT: Final = _code("invalid_export", 2, "An export file is not a valid tracestore "
    "export.")
EXPORT_UNKNOWN_FIELD: Final = _code("export_unknown_field", 2, "An exported event has unknown "
    "fields.")
EXPORT_VALUE_OUT_OF_RANGE: Final = _code("export_value_out_of_range", 2, "An exported value is "
    "outside what this tracestore reads.")
EXPORT_BAD_TIME: Final = _code("export_bad_time", 2, "An exported recorded_at is not a time as "
    "the store writes it.")
EXPORT_OUT_OF_ORDER: Final = _code("export_out_of_order", 2, "Exported positions do not follow "
    "each other.")
EXPORT_PAYLOAD_NOT_CANONICAL: Final = _code("export_payload_not_canonical", 2, "An exported "
    "payload is not the JSON the store writes for it.")
EXPORT_HASH_MISMATCH: Final = _code("export_hash_mismatch", 2, "An exported event does not hash "
    "to its recorded hash (the file was changed).")
EXPORT_BLOB_MISSING: Final = _code("export_blob_missing", 2, "Captures named by exported events "
    "have no blob line.")
STORE_NOT_EMPTY: Final = _code("store_not_empty", 3, "Import needs an empty store.")
IMPORT_REFUSED: Final = _code("import_refused", 3, "The database refused the import.")
EXPORT_FAILED: Final = _code("export_failed", 1, "The OTLP endpoint refused or could not take the "
    "spans.")
INVALID_ENDPOINT: Final = _code("invalid_endpoint", 2, "An --endpoint is not an http(s) URL with "
    "a host and a port.")

# -- tracestore proxy (HTTP error bodies; the exit code is the command's) --------------------
INVALID_LISTEN: Final = _code("invalid_listen", 2, "The --listen value is not HOST:PORT.")
INVALID_ROUTE: Final = _code("invalid_route", 2, "A --route is not PREFIX=URL.")
REQUEST_TOO_LARGE: Final = _code("request_too_large", 2, "A request body to the proxy is larger "
    "than the limit.")
NO_ROUTE: Final = _code("no_route", None, "Proxy, HTTP 404: no --route prefix matches the "
    "request path.")
UPSTREAM_TIMEOUT: Final = _code("upstream_timeout", None, "Proxy, HTTP 504: the upstream did not "
    "answer in time.")
UPSTREAM_UNREACHABLE: Final = _code("upstream_unreachable", None, "Proxy, HTTP 502: the upstream "
    "could not be reached.")
NOT_RECORDING: Final = _code("not_recording", None, "Proxy, HTTP 503: this proxy records "
    "nothing.")
INVALID_DESTINATION_REQUEST: Final = _code("invalid_destination_request", None, "Proxy, HTTP "
    "400: a destination request is not the JSON object expected.")
METHOD_NOT_ALLOWED: Final = _code("method_not_allowed", None, "Proxy, HTTP 405: the endpoint "
    "takes POST only.")

# -- recording (issue 18/19 additions) -------------------------------------------------------
RECORDER_CLOSED: Final = _code("recorder_closed", 2, "A recording call went through a Recorder "
    "(or a handle of one) after it was closed; nothing is written.")
UNKNOWN_PROFILE: Final = _code("unknown_profile", 2, "A trace opened with profile=... names no shipped "
    "profile (it would hold every answer no_profile).")
INVALID_FRAME_JSON: Final = _code("invalid_frame_json", 2, "A seed-000 application frame is not "
    "strict JSON; the frames before it are kept and the attempt is held.")

# -- tracestore serve (the desk; form errors are HTTP 400 pages, start-up errors exit 2) -----
REMOTE_REFUSED: Final = _code("remote_refused", 2, "The desk was asked to bind a non-loopback host "
    "without --allow-remote and --token.")
INVALID_PORT: Final = _code("invalid_port", 2, "The --port value is not 0-65535.")
LISTEN_FAILED: Final = _code("listen_failed", 2, "The desk could not listen on HOST:PORT (in use, "
    "or not allowed).")
STORE_READ_ONLY: Final = _code("store_read_only", 2, "A read-only store was opened with a "
    "reviewer identity: the desk can show it but not record reviews.")
INVALID_ACTION: Final = _code("invalid_action", 2, "A desk form's action is not set or approve.")
INVALID_EVIDENCE: Final = _code("invalid_evidence", 2, "Evidence positions in a desk form are "
    "not numbers.")
INVALID_POSITION: Final = _code("invalid_position", 2, "A desk page's log position parameter is "
    "not a number.")


#: Every registered code by name.
CODES: Final[dict[str, ErrorCode]] = {
    value.code: value for value in list(globals().values()) if isinstance(value, ErrorCode)}
#: An old name → the code that replaced it.
ALIASES: Final[dict[str, str]] = {
    alias: entry.code for entry in CODES.values() for alias in entry.aliases}


def lookup(code: str) -> ErrorCode | None:
    """The registered code ``code`` names (an alias names its replacement), else None."""
    return CODES.get(ALIASES.get(code, code))


def aliases_of(code: str) -> tuple[str, ...]:
    """The old names still written beside ``code`` in JSON errors (empty for most)."""
    entry = CODES.get(code)
    return entry.aliases if entry is not None else ()


def markdown_table() -> str:
    """The table docs/errors.md holds between its markers (sorted by code)."""
    lines = ["| code | exit | meaning | aliases (one release) |", "|---|---|---|---|"]
    for entry in sorted(CODES.values(), key=lambda e: e.code):
        exit_code = "HTTP" if entry.exit_code is None else str(entry.exit_code)
        aliases = ", ".join(f"`{a}`" for a in entry.aliases)
        lines.append(f"| `{entry.code}` | {exit_code} | {entry.meaning} | {aliases} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
