"""Read-only SQL views for SQL tools (Datasette, sqlite-utils, psql): ts_attempts, ts_decisions.

The views read the payload JSON (``json_extract`` on SQLite, the ``jsonb`` operators on
PostgreSQL) so a user can facet and filter attempts by status without JSON functions.
They show what the log *recorded* (the latest ``release.decided`` event of each attempt);
``tracestore release ATTEMPT`` decides from the events and stays the authority.  The audit's
violation count is not derivable in SQL (it compares destination texts with the decided
answers), so ``ts_attempts`` has no violation column: ``tracestore audit`` counts them.

Revision ID: 0003
Revises: 0001
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VIEWS = ("ts_attempts", "ts_decisions")


def _sql(dialect: str) -> list[str]:
    if dialect == "postgresql":
        def text(col: str, path: str) -> str:
            return f"({col}::jsonb ->> '{path}')"

        def first(col: str, key: str) -> str:
            return f"({col}::jsonb -> '{key}' ->> 0)"

        def integer(col: str, path: str) -> str:
            return f"({col}::jsonb ->> '{path}')::integer"

        def boolean(col: str, path: str) -> str:
            return f"({col}::jsonb ->> '{path}')::boolean"

        def json_of(col: str, key: str) -> str:
            return f"({col}::jsonb -> '{key}')::text"
    else:
        def text(col: str, path: str) -> str:
            return f"json_extract({col}, '$.{path}')"

        def first(col: str, key: str) -> str:
            return f"json_extract({col}, '$.{key}[0]')"

        def integer(col: str, path: str) -> str:
            return f"json_extract({col}, '$.{path}')"

        def boolean(col: str, path: str) -> str:
            return f"json_extract({col}, '$.{path}')"

        def json_of(col: str, key: str) -> str:
            return f"json_extract({col}, '$.{key}')"

    decisions = f"""
CREATE VIEW ts_decisions AS
SELECT d.position AS position, d.trace_id AS trace_id,
       {text('d.payload', 'attempt_id')} AS attempt_id,
       {text('d.payload', 'status')} AS status,
       {boolean('d.payload', 'eligible')} AS eligible,
       {first('d.payload', 'reasons')} AS first_reason,
       {json_of('d.payload', 'reasons')} AS reasons,
       {integer('d.payload', 'decided_at_position')} AS decided_at_position,
       {text('d.payload', 'policy_version')} AS policy_version,
       d.recorded_at AS recorded_at
FROM ts_events d
WHERE d.type = 'release.decided'
"""
    # Every attempt with its latest recorded decision (same stream: attempt:<id>) and the
    # review state (review:<template>:<id> streams): approved, in_review or none.
    attempts = f"""
CREATE VIEW ts_attempts AS
SELECT {text('s.payload', 'attempt_id')} AS attempt_id, s.trace_id AS trace_id,
       {text('s.payload', 'api')} AS api,
       {text('s.payload', 'reader')} AS reader,
       {text('s.payload', 'retry_of')} AS retry_of,
       s.position AS started_position, s.recorded_at AS started_at,
       (SELECT count(*) FROM ts_events f
         WHERE f.stream = s.stream AND f.type = 'frame.received') AS frames,
       {text('d.payload', 'status')} AS status,
       {first('d.payload', 'reasons')} AS first_reason,
       {integer('d.payload', 'decided_at_position')} AS decided_at_position,
       {boolean('d.payload', 'eligible')} AS eligible,
       d.position AS decision_position,
       CASE WHEN EXISTS (SELECT 1 FROM ts_events r WHERE r.type = 'review.approved'
                           AND r.trace_id = s.trace_id
                           AND {text('r.payload', 'attempt_id')} = {text('s.payload', 'attempt_id')})
            THEN 'approved'
            WHEN EXISTS (SELECT 1 FROM ts_events r WHERE r.type = 'review.field_set'
                           AND r.trace_id = s.trace_id
                           AND {text('r.payload', 'attempt_id')} = {text('s.payload', 'attempt_id')})
            THEN 'in_review' ELSE 'none' END AS review_state
FROM ts_events s
LEFT JOIN ts_events d ON d.position = (
    SELECT max(x.position) FROM ts_events x
     WHERE x.stream = s.stream AND x.type = 'release.decided')
WHERE s.type = 'attempt.started'
"""
    return [decisions, attempts]


def upgrade() -> None:
    for statement in _sql(op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for view in VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {view}")
