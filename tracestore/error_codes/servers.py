"""Error codes of the two servers: ``tracestore proxy`` (its HTTP error bodies have no exit
code) and ``tracestore serve``, the reviewer's desk.

Declared here, registered by ``tracestore.error_codes`` (import them from there).
"""

from __future__ import annotations

from typing import Final

from tracestore.error_codes.entry import _code

# -- tracestore mock (a scenario refused before serving; HTTP error bodies in the provider's
#    own shape) --------------------------------------------------------------------------
INVALID_MOCK_SCENARIO: Final = _code("invalid_mock_scenario", 2, "The mock's scenario file is "
    "not JSON or does not follow its schema (tracestore mock --schema).")
MOCK_FAULT_OUT_OF_RANGE: Final = _code("mock_fault_out_of_range", 2, "A scripted fault is aimed "
    "past the end of its exchange's capture.")
MOCK_FAULT_NOT_SUPPORTED: Final = _code("mock_fault_not_supported", 2, "A scripted frame "
    "fault has no native form in its exchange's capture (not an SSE stream of Chat "
    "Completions, Responses or Anthropic Messages, or an API without that form).")
MOCK_STORE_NO_EXCHANGES: Final = _code("mock_store_no_exchanges", 2, "Mock "
    "--from-store: the store (or --trace) holds no recorded attempt with a request endpoint "
    "and stored bytes.")
MOCK_STORE_SEGMENT_GAP: Final = _code("mock_store_segment_gap", 2, "Mock "
    "--from-store: a recorded attempt's capture segments do not join into one stream.")
REPLAY_REQUEST_MISMATCH: Final = _code("replay_request_mismatch", None, "Mock, HTTP 400: the "
    "request body differs from the recorded one (the message names the first field).")
REPLAY_EXHAUSTED: Final = _code("replay_exhausted", None, "Mock, HTTP 409: every recorded "
    "exchange for the path has been played.")
REPLAY_NO_EXCHANGE: Final = _code("replay_no_exchange", None, "Mock, HTTP 404: no recorded "
    "exchange answers the request path.")
CONFORMANCE_PACK_MISSING: Final = _code("conformance_pack_missing", 4, "The conformance pack's "
    "files are in neither the checkout nor the installed package (a broken install).")
MOCK_FAULT: Final = _code("mock_fault", None, "Mock: a scripted HTTP error status (the "
    "scenario's faults.status).")

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
