"""The append-only event log, content-addressed blobs and the store marker.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Append-only is enforced by the database as well as the code.  These guard against
# accidents (a stray UPDATE), not attackers: the hash chain is what detects tampering.
SQLITE_TRIGGERS = [
    f"CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table} "
    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
    for table in ("ts_events", "ts_blobs")
    for verb in ("UPDATE", "DELETE")
]

POSTGRES_FUNCTION = """
CREATE OR REPLACE FUNCTION ts_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END;
$$ LANGUAGE plpgsql
"""
POSTGRES_TRIGGERS = [
    f"CREATE TRIGGER {table}_no_change BEFORE UPDATE OR DELETE ON {table} "
    f"FOR EACH ROW EXECUTE FUNCTION ts_append_only()"
    for table in ("ts_events", "ts_blobs")
] + [
    f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION ts_append_only()"
    for table in ("ts_events", "ts_blobs")
]


def upgrade() -> None:
    op.create_table(
        "ts_events",
        sa.Column("position", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("id", sa.String(64), nullable=False, unique=True),
        sa.Column("stream", sa.String(255), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("recorded_at", sa.String(40), nullable=False),
        sa.Column("trace_id", sa.String(255), nullable=True),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.UniqueConstraint("stream", "version", name="uq_ts_events_stream_version"),
    )
    op.create_index("ix_ts_events_trace_position", "ts_events", ["trace_id", "position"])
    op.create_table(
        "ts_blobs",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "ts_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(255), nullable=False),
    )
    op.execute("INSERT INTO ts_meta (key, value) VALUES ('format', 'tracestore-eventlog-1')")
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for statement in SQLITE_TRIGGERS:
            op.execute(statement)
    elif dialect == "postgresql":
        op.execute(POSTGRES_FUNCTION)
        for statement in POSTGRES_TRIGGERS:
            op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the event log is append-only; it is never downgraded")
