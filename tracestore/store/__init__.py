"""The event store.  Kept import-free: ``tracestore --help`` reads ``ENV_VAR`` from here
without loading SQLAlchemy (``engine`` and ``log`` import it)."""

ENV_VAR = "TRACESTORE_DB"
