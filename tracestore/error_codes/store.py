"""Error codes of the store and what reads or writes it: the store itself, look-ups in it,
ingest, replay and recording, keys and checkpoints, export and import.

Declared here, registered by ``tracestore.error_codes`` (import them from there).
"""

from __future__ import annotations

from typing import Final

from tracestore.error_codes.entry import _code

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
BLOB_DAMAGED: Final = _code("blob_damaged", 3, "A stored capture's row is not bytes of its "
    "recorded size (stored as text, a number or NULL); position names the event naming it.")
REVIEW_SIGNATURE_INVALID: Final = _code("review_signature_invalid", 3, "A review event's "
    "signature does not hold.")
REVIEWER_REGISTRATION_INVALID: Final = _code("reviewer_registration_invalid", 3, "A reviewer "
    "registration was not signed by an admin registered before it (or was edited after).")
POSITION_OUT_OF_RANGE: Final = _code("position_out_of_range", 2, "A position option is outside "
    "the range of positions.")
PARTITION_COUNT_INVALID: Final = _code("partition_count_invalid", 2, "The "
    "--partitions of store partition is not a whole number from 2 to 1024.")
PARTITION_NEEDS_POSTGRESQL: Final = _code("partition_needs_postgresql", 2, "Only a PostgreSQL "
    "store can be partitioned; the --db given is a SQLite store or another database.")
STORE_ALREADY_PARTITIONED: Final = _code("store_already_partitioned", 3, "The store's tables "
    "are partitioned already; nothing was changed.")
PARTITION_REFUSED: Final = _code("partition_refused", 3, "The database refused to rebuild the "
    "store's tables as partitioned ones; nothing was changed.")

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
RESUME_NOT_POSSIBLE: Final = _code("resume_not_possible", 2, "--resume-of names an attempt "
    "a second connection cannot continue: not an OpenAI Responses stream, no sequence_number "
    "to resume after, or the resumed attempt's own id.")
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
    "(writer='process' or TRACESTORE_WRITER=process) was given an in-memory store, which its "
    "writer process cannot open.")
RECORDER_PROCESS_DIED: Final = _code("recorder_process_died", 3, "The recorder's writer process "
    "exited or its journal could not be written; recording stopped, the application's streams "
    "went on.")

# -- recording -------------------------------------------------------------------------------
RECORDER_CLOSED: Final = _code("recorder_closed", 2, "A recording call went through a Recorder "
    "(or a handle of one) after it was closed; nothing is written.")
UNKNOWN_PROFILE: Final = _code("unknown_profile", 2, "A trace opened with profile=... names no shipped "
    "profile (it would hold every answer no_profile).")
INVALID_FRAME_JSON: Final = _code("invalid_frame_json", 2, "A seed-000 application frame is not "
    "strict JSON; the frames before it are kept and the attempt is held.")

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
CHECKPOINT_NOT_EXTENDED: Final = _code("checkpoint_not_extended", 3, "The store does not extend "
    "the checkpoint a new one was to extend (a trace went back, vanished or was rewritten); "
    "nothing was signed.")
CHECKPOINTS_INCONSISTENT: Final = _code("checkpoints_inconsistent", 3, "The newer checkpoint's "
    "log of heads does not extend the older one's.")

# -- export and import -----------------------------------------------------------------------
INVALID_EXPORT: Final = _code("invalid_export", 2, "An export file is not a valid tracestore "
    "export.")
EXPORT_UNKNOWN_FIELD: Final = _code("export_unknown_field", 2, "An export's header or one of "
    "its events has unknown fields.")
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
EXPORT_STREAM_MISMATCH: Final = _code("export_stream_mismatch", 2, "An exported event's "
    "payload names another attempt or trace than its stream.")
IMPORT_DUPLICATE_EVENT: Final = _code("import_duplicate_event", 2, "An export holds the same "
    "event id twice.")
STORE_NOT_EMPTY: Final = _code("store_not_empty", 3, "Import needs an empty store.")
IMPORT_REFUSED: Final = _code("import_refused", 3, "The database refused the import.")
EXPORT_FAILED: Final = _code("export_failed", 1, "The OTLP endpoint refused or could not take the "
    "spans.")
INVALID_ENDPOINT: Final = _code("invalid_endpoint", 2, "An --endpoint is not an http(s) URL with "
    "a host and a port.")
