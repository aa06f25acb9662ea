"""ts_destinations, and ts_attempts saying ``unreviewed`` as the review queue does.

``ts_destinations``: one row per ``destination.written`` event (what the application, or a
replay's harness, wrote where): attempt_id, trace_id, destination, position, source,
sha256, text.  ``text`` is NULL when the write holds no text of its own: a redacted export
keeps only ``sha256:<hex>`` of it (the digest the row already has in ``sha256``).

``ts_attempts`` is replaced so that its review states are the words ``tracestore attempts``
and ``ts_attempt_index`` use: ``unreviewed`` (it said ``none``) and ``in-review`` (it said
``in_review``), so a SQL filter and the queue agree.  ``stale`` and ``conflict`` stay the
queue's own: they compare an approval's content digest with the record, which SQL cannot.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _helpers(dialect: str) -> tuple:
    if dialect == "postgresql":
        def text(col: str, path: str) -> str:
            return f"({col}::jsonb ->> '{path}')"

        def first(col: str, key: str) -> str:
            return f"({col}::jsonb -> '{key}' ->> 0)"

        def integer(col: str, path: str) -> str:
            return f"({col}::jsonb ->> '{path}')::integer"

        def boolean(col: str, path: str) -> str:
            return f"({col}::jsonb ->> '{path}')::boolean"
    else:
        def text(col: str, path: str) -> str:
            return f"json_extract({col}, '$.{path}')"

        def first(col: str, key: str) -> str:
            return f"json_extract({col}, '$.{key}[0]')"

        def integer(col: str, path: str) -> str:
            return f"json_extract({col}, '$.{path}')"

        def boolean(col: str, path: str) -> str:
            return f"json_extract({col}, '$.{path}')"
    return text, first, integer, boolean


def _attempts(dialect: str, in_review: str, unreviewed: str) -> str:
    """Migration 0003's ts_attempts with these names for its review states."""
    text, first, integer, boolean = _helpers(dialect)
    return f"""
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
            THEN '{in_review}' ELSE '{unreviewed}' END AS review_state
FROM ts_events s
LEFT JOIN ts_events d ON d.position = (
    SELECT max(x.position) FROM ts_events x
     WHERE x.stream = s.stream AND x.type = 'release.decided')
WHERE s.type = 'attempt.started'
"""


def _destinations(dialect: str) -> str:
    text = _helpers(dialect)[0]
    written = text("w.payload", "text")
    digest = text("w.payload", "sha256")
    return f"""
CREATE VIEW ts_destinations AS
SELECT {text('w.payload', 'attempt_id')} AS attempt_id, w.trace_id AS trace_id,
       {text('w.payload', 'destination')} AS destination,
       w.position AS position,
       {text('w.payload', 'source')} AS source,
       {digest} AS sha256,
       CASE WHEN {written} = 'sha256:' || {digest} THEN NULL ELSE {written} END AS text
FROM ts_events w
WHERE w.type = 'destination.written'
"""


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW ts_attempts")
    op.execute(_attempts(dialect, "in-review", "unreviewed"))
    op.execute(_destinations(dialect))


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW IF EXISTS ts_destinations")
    op.execute("DROP VIEW ts_attempts")
    op.execute(_attempts(dialect, "in_review", "none"))
