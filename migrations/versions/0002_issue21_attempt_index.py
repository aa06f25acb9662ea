"""The review queue's projection tables (issue 21): one row per attempt (status, reasons,
violations, review state) and one per review record (state, who set and approved what),
rebuilt per trace from the events by ``tracestore.cli.queue_index`` as appends arrive.

They are projections, not evidence: never hashed, safe to drop and rebuild (the event
log stays append-only; these rows are replaced when their trace gets new events).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ts_attempt_index",
        sa.Column("attempt_id", sa.String(255), primary_key=True),
        sa.Column("trace_id", sa.String(255), nullable=False),
        sa.Column("api", sa.String(64), nullable=True),
        sa.Column("first_position", sa.Integer, nullable=False),
        sa.Column("started_at", sa.String(40), nullable=False),
        sa.Column("events", sa.Integer, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("first_reason", sa.String(64), nullable=True),
        sa.Column("reasons", sa.Text, nullable=False),
        sa.Column("violations", sa.Integer, nullable=False),
        sa.Column("violation_codes", sa.Text, nullable=False),
        sa.Column("review_state", sa.String(16), nullable=False),
    )
    op.create_index("ix_ts_attempt_index_status", "ts_attempt_index",
                    ["status", "first_position"])
    op.create_index("ix_ts_attempt_index_review", "ts_attempt_index",
                    ["review_state", "first_position"])
    op.create_index("ix_ts_attempt_index_trace", "ts_attempt_index",
                    ["trace_id", "first_position"])
    op.create_index("ix_ts_attempt_index_started", "ts_attempt_index", ["started_at"])
    op.create_index("ix_ts_attempt_index_position", "ts_attempt_index", ["first_position"])
    op.create_table(
        "ts_review_index",
        sa.Column("template", sa.String(64), primary_key=True),
        sa.Column("attempt_id", sa.String(255), primary_key=True),
        sa.Column("trace_id", sa.String(255), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("last_position", sa.Integer, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_index("ix_ts_review_index_state", "ts_review_index", ["state", "last_position"])
    op.create_index("ix_ts_review_index_trace", "ts_review_index", ["trace_id"])
    op.create_table(
        "ts_index_state",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ts_index_state")
    op.drop_table("ts_review_index")
    op.drop_table("ts_attempt_index")
