"""One order and one hash chain per trace.

``ts_events.trace_version`` numbers a trace's events 1, 2, … (events without a trace form
the store's own chain, keyed ``''``); ``(coalesce(trace_id, ''), trace_version)`` is
unique, which is what makes two writers of one trace unable to fork it.  Rows appended
from here on hash onto the previous row *of their trace* (``store.chain.trace_chain_hash``),
so appends to different traces share no head.

Existing rows are not re-hashed: their ``hash`` stays the global chain they were written
with, verifiable from position 1 up to ``ts_meta.legacy_chain_end`` (the head at this
migration, ``ts_meta.legacy_chain_head`` its hash).  Numbering them needs an UPDATE of
``trace_version`` alone, done with the append-only triggers lifted for that statement.
A store that held events records what was done as its first per-trace event: a
``store.setting`` named ``chains`` in the store's own chain (no trace), whose reason names
the end of the global chain and its hash.

On PostgreSQL, positions come from ``ts_events_position_seq`` through ``ts_reserve_positions``
(a contiguous block per append, reserved with the transaction id under a lock held for the
one statement), and ``txid`` records each row's transaction, so a reader paging by position
can stop below the oldest transaction still open (``store.reads``).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Session-level advisory lock held only inside ``ts_reserve_positions``.
RESERVE_LOCK = 7_245_002

POSTGRES_RESERVE = f"""
CREATE OR REPLACE FUNCTION ts_reserve_positions(n bigint) RETURNS bigint AS $$
DECLARE first_position bigint;
BEGIN
  PERFORM pg_advisory_lock({RESERVE_LOCK});
  BEGIN
    PERFORM pg_current_xact_id();
    first_position := nextval('ts_events_position_seq');
    IF n > 1 THEN
      PERFORM setval('ts_events_position_seq', first_position + n - 1);
    END IF;
  EXCEPTION WHEN OTHERS THEN
    PERFORM pg_advisory_unlock({RESERVE_LOCK});
    RAISE;
  END;
  PERFORM pg_advisory_unlock({RESERVE_LOCK});
  RETURN first_position;
END $$ LANGUAGE plpgsql
"""

_NUMBER = """
UPDATE ts_events SET trace_version = numbered.n
FROM (SELECT position AS p,
             row_number() OVER (PARTITION BY coalesce(trace_id, '') ORDER BY position) AS n
      FROM ts_events) AS numbered
WHERE ts_events.position = numbered.p
"""


def upgrade() -> None:
    bind = op.get_bind()
    dialect = bind.dialect.name
    op.add_column("ts_events", sa.Column("trace_version", sa.Integer(), nullable=False,
                                         server_default="0"))
    op.add_column("ts_events", sa.Column("txid", sa.BigInteger(), nullable=True))
    if dialect == "postgresql":  # set after the column exists: stored rows keep NULL
        op.execute("ALTER TABLE ts_events ALTER COLUMN txid SET DEFAULT "
                   "(pg_current_xact_id()::text::bigint)")
    head = bind.execute(sa.text("SELECT position, hash FROM ts_events "
                                "ORDER BY position DESC LIMIT 1")).first()
    if head is not None:
        _number_existing_rows(dialect)
    op.execute("CREATE UNIQUE INDEX uq_ts_events_trace_version ON ts_events "
               "((coalesce(trace_id, '')), trace_version)")
    end, head_hash = (0, "") if head is None else (int(head[0]), str(head[1]))
    meta = sa.table("ts_meta", sa.column("key"), sa.column("value"))
    op.bulk_insert(meta, [{"key": "legacy_chain_end", "value": str(end)},
                          {"key": "legacy_chain_head", "value": head_hash}])
    if end:
        end = _record_the_split(bind, end, head_hash)
    if dialect == "postgresql":
        op.execute("CREATE SEQUENCE ts_events_position_seq AS bigint")
        if end:
            op.execute(f"SELECT setval('ts_events_position_seq', {end})")
        op.execute(POSTGRES_RESERVE)


def _record_the_split(bind: sa.Connection, end: int, head_hash: str) -> int:
    """Append the ``store.setting`` that says where the global chain ends, on the
    store's own chain; the new head position."""
    from tracestore.events import SCHEMA_VERSIONS, StoreSetting, new_event_id
    from tracestore.store.append_types import canonical_payload, utc_now
    from tracestore.store.chain import GENESIS_HASH, trace_chain_hash

    event = StoreSetting(name="chains", value="per-trace", by="migration 0006",
                         reason=f"rows 1..{end} keep the global chain they were written "
                                f"with; its head is {head_hash}")
    payload = canonical_payload(event)
    own = bind.execute(sa.text("SELECT trace_version, hash FROM ts_events WHERE trace_id IS "
                               "NULL ORDER BY position DESC LIMIT 1")).first()
    version_row = bind.execute(sa.text("SELECT max(version) FROM ts_events WHERE stream = "
                                       "'settings'")).first()
    trace_version = 1 if own is None else int(own[0]) + 1
    prev = GENESIS_HASH if own is None else str(own[1])
    version = int(version_row[0] or 0) + 1 if version_row else 1
    position, event_id, recorded_at = end + 1, new_event_id(), utc_now()
    schema_version = SCHEMA_VERSIONS[event.type]
    digest = trace_chain_hash(prev, position, trace_version, event_id, "settings", version,
                              event.type, schema_version, recorded_at, None, payload)
    bind.execute(sa.text(
        "INSERT INTO ts_events (position, id, stream, version, type, schema_version, "
        "recorded_at, trace_id, payload, hash, trace_version) VALUES (:p, :i, 'settings', "
        ":v, :t, :s, :r, NULL, :payload, :h, :tv)"),
        {"p": position, "i": event_id, "v": version, "t": event.type, "s": schema_version,
         "r": recorded_at, "payload": payload.decode("utf-8"), "h": digest,
         "tv": trace_version})
    return position


def _number_existing_rows(dialect: str) -> None:
    if dialect == "sqlite":
        op.execute("DROP TRIGGER ts_events_no_update")
        op.execute(_NUMBER)
        op.execute("CREATE TRIGGER ts_events_no_update BEFORE UPDATE ON ts_events "
                   "BEGIN SELECT RAISE(ABORT, 'ts_events is append-only'); END")
    else:
        op.execute("ALTER TABLE ts_events DISABLE TRIGGER ts_events_no_change")
        op.execute(_NUMBER)
        op.execute("ALTER TABLE ts_events ENABLE TRIGGER ts_events_no_change")


def downgrade() -> None:
    op.execute("DROP INDEX uq_ts_events_trace_version")
    op.execute("DELETE FROM ts_meta WHERE key IN ('legacy_chain_end', 'legacy_chain_head')")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION ts_reserve_positions(bigint)")
        op.execute("DROP SEQUENCE ts_events_position_seq")
    with op.batch_alter_table("ts_events") as batch:
        batch.drop_column("txid")
        batch.drop_column("trace_version")
