"""The event store.  Kept import-free: ``tracestore --help`` reads ``ENV_VAR`` from here
without loading SQLAlchemy (``engine`` and ``log`` import it)."""

ENV_VAR = "TRACESTORE_DB"

#: The ts_meta row that marks a database as a tracestore event log (key, value).
STORE_MARKER = ("format", "tracestore-eventlog-1")
