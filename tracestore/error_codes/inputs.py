"""Error codes of what a command is given: the class defaults, the command line, files and
input bytes, wire framing, providers and projections, task rules and contracts, and agent
run results.  Mostly exit 2 (bad input).

Declared here, registered by ``tracestore.error_codes`` (import them from there).
"""

from __future__ import annotations

from typing import Final

from tracestore.error_codes.entry import _code

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
MISSING_DEPENDENCY: Final = _code("missing_dependency", 2, "A Python package the command "
    "imports is not installed; the message names the pip line that installs it (for example "
    "tracestore[postgres] for psycopg).")

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

INVALID_HAR: Final = _code("invalid_har", 2, "A HAR file that does not hold exactly one "
    "WebSocket entry with readable _webSocketMessages (send/receive, epoch-seconds time, a "
    "JSON text or base64 binary message).")

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
INVALID_SESSION_LINE: Final = _code("invalid_session_line", 2, "A line of a realtime session "
    'capture is not {"dir": "server"|"client", "t": null|number|string, "data": …} (or a '
    "close record), or the session ends inside a line.")
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
