"""Each trace's audit, as ``audit --json`` writes it (issue 25 item 4): one row per trace,
rebuilt with the review queue's rows by ``tracestore.cli.queue_index.sync`` whenever the
trace gets new events, so a whole-store audit reads one row per trace instead of judging
every event again.

A projection, not evidence: never hashed, safe to drop.  Its state row in
``ts_index_state`` is named after the code that computed it (``audit:<fingerprint>``), so
another tracestore version never reads it (it audits live instead).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ts_audit_index",
        sa.Column("trace_id", sa.String(255), primary_key=True),
        sa.Column("first_position", sa.Integer, nullable=False),
        sa.Column("attempts", sa.Text, nullable=False),
        sa.Column("violations", sa.Text, nullable=False),
    )
    op.create_index("ix_ts_audit_index_position", "ts_audit_index", ["first_position"],
                    unique=True)


def downgrade() -> None:
    op.drop_table("ts_audit_index")
