"""A new SQLite store's schema as the migrations leave it, written without running Alembic.

Creating a store ran the four migrations through Alembic: importing Alembic (and the Mako
and Pygments it loads) and running them cost ~0.15 s of CPU, more than a tenth of a
100,000-frame ingest into a new file.  ``STATEMENTS`` is what the
migrations produce on an empty SQLite file -- every ``sqlite_master`` entry's own SQL text,
in creation order, then every row they insert -- dumped from a database Alembic migrated
(``dump``).  ``upgrade`` replays it, in the same write transaction, on an EMPTY SQLite
database when it is for this code's head revision; any other database (an older schema, one
not ours, PostgreSQL) is migrated by Alembic as before.  The migrations stay the source:
``tests/test_store_migrate.py`` migrates a file with Alembic and checks its dump equals
``STATEMENTS`` (and prints the new text when a migration changed it).
"""

from __future__ import annotations

from typing import Any

#: The revision ``STATEMENTS`` were dumped at (``migrate.SCHEMA_HEAD`` when current).
REVISION = "0007"

STATEMENTS: tuple[tuple[str, tuple[Any, ...]], ...] = (
    (
        'CREATE TABLE alembic_version (\n'
        '\tversion_num VARCHAR(32) NOT NULL, \n'
        '\tCONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)\n'
        ')', ()),
    (
        'CREATE TABLE ts_events (\n'
        '\tposition INTEGER NOT NULL, \n'
        '\tid VARCHAR(64) NOT NULL, \n'
        '\tstream VARCHAR(255) NOT NULL, \n'
        '\tversion INTEGER NOT NULL, \n'
        '\ttype VARCHAR(64) NOT NULL, \n'
        '\tschema_version INTEGER NOT NULL, \n'
        '\trecorded_at VARCHAR(40) NOT NULL, \n'
        '\ttrace_id VARCHAR(255), \n'
        '\tpayload TEXT NOT NULL, \n'
        "\thash VARCHAR(64) NOT NULL, trace_version INTEGER DEFAULT '0' NOT NULL, txid BIG"
        'INT, \n'
        '\tPRIMARY KEY (position), \n'
        '\tCONSTRAINT uq_ts_events_stream_version UNIQUE (stream, version), \n'
        '\tUNIQUE (id)\n'
        ')', ()),
    ('CREATE INDEX ix_ts_events_trace_position ON ts_events (trace_id, position)', ()),
    (
        'CREATE TABLE ts_blobs (\n'
        '\tsha256 VARCHAR(64) NOT NULL, \n'
        '\tsize INTEGER NOT NULL, \n'
        '\tdata BLOB NOT NULL, \n'
        '\tPRIMARY KEY (sha256)\n'
        ')', ()),
    (
        'CREATE TABLE ts_meta (\n'
        '\t"key" VARCHAR(64) NOT NULL, \n'
        '\tvalue VARCHAR(255) NOT NULL, \n'
        '\tPRIMARY KEY ("key")\n'
        ')', ()),
    (
        'CREATE TRIGGER ts_events_no_update BEFORE UPDATE ON ts_events BEGIN SELECT RAISE'
        "(ABORT, 'ts_events is append-only'); END", ()),
    (
        'CREATE TRIGGER ts_events_no_delete BEFORE DELETE ON ts_events BEGIN SELECT RAISE'
        "(ABORT, 'ts_events is append-only'); END", ()),
    (
        'CREATE TRIGGER ts_blobs_no_update BEFORE UPDATE ON ts_blobs BEGIN SELECT RAISE(A'
        "BORT, 'ts_blobs is append-only'); END", ()),
    (
        'CREATE TRIGGER ts_blobs_no_delete BEFORE DELETE ON ts_blobs BEGIN SELECT RAISE(A'
        "BORT, 'ts_blobs is append-only'); END", ()),
    (
        'CREATE TABLE ts_attempt_index (\n'
        '\tattempt_id VARCHAR(255) NOT NULL, \n'
        '\ttrace_id VARCHAR(255) NOT NULL, \n'
        '\tapi VARCHAR(64), \n'
        '\tfirst_position INTEGER NOT NULL, \n'
        '\tstarted_at VARCHAR(40) NOT NULL, \n'
        '\tevents INTEGER NOT NULL, \n'
        '\tstatus VARCHAR(32) NOT NULL, \n'
        '\tfirst_reason VARCHAR(64), \n'
        '\treasons TEXT NOT NULL, \n'
        '\tviolations INTEGER NOT NULL, \n'
        '\tviolation_codes TEXT NOT NULL, \n'
        '\treview_state VARCHAR(16) NOT NULL, \n'
        '\tPRIMARY KEY (attempt_id)\n'
        ')', ()),
    (
        'CREATE INDEX ix_ts_attempt_index_status ON ts_attempt_index (status, first_posit'
        'ion)', ()),
    (
        'CREATE INDEX ix_ts_attempt_index_review ON ts_attempt_index (review_state, first'
        '_position)', ()),
    (
        'CREATE INDEX ix_ts_attempt_index_trace ON ts_attempt_index (trace_id, first_posi'
        'tion)', ()),
    ('CREATE INDEX ix_ts_attempt_index_started ON ts_attempt_index (started_at)', ()),
    ('CREATE INDEX ix_ts_attempt_index_position ON ts_attempt_index (first_position)', ()),
    (
        'CREATE TABLE ts_review_index (\n'
        '\ttemplate VARCHAR(64) NOT NULL, \n'
        '\tattempt_id VARCHAR(255) NOT NULL, \n'
        '\ttrace_id VARCHAR(255) NOT NULL, \n'
        '\tstate VARCHAR(16) NOT NULL, \n'
        '\tdigest VARCHAR(64) NOT NULL, \n'
        '\tlast_position INTEGER NOT NULL, \n'
        '\tdetail TEXT NOT NULL, \n'
        '\tPRIMARY KEY (template, attempt_id)\n'
        ')', ()),
    ('CREATE INDEX ix_ts_review_index_state ON ts_review_index (state, last_position)', ()),
    ('CREATE INDEX ix_ts_review_index_trace ON ts_review_index (trace_id)', ()),
    (
        'CREATE TABLE ts_index_state (\n'
        '\tname VARCHAR(64) NOT NULL, \n'
        '\tposition INTEGER NOT NULL, \n'
        '\tPRIMARY KEY (name)\n'
        ')', ()),
    (
        'CREATE VIEW ts_decisions AS\n'
        'SELECT d.position AS position, d.trace_id AS trace_id,\n'
        "       json_extract(d.payload, '$.attempt_id') AS attempt_id,\n"
        "       json_extract(d.payload, '$.status') AS status,\n"
        "       json_extract(d.payload, '$.eligible') AS eligible,\n"
        "       json_extract(d.payload, '$.reasons[0]') AS first_reason,\n"
        "       json_extract(d.payload, '$.reasons') AS reasons,\n"
        "       json_extract(d.payload, '$.decided_at_position') AS decided_at_position,\n"
        "       json_extract(d.payload, '$.policy_version') AS policy_version,\n"
        '       d.recorded_at AS recorded_at\n'
        'FROM ts_events d\n'
        "WHERE d.type = 'release.decided'", ()),
    (
        'CREATE TABLE ts_audit_index (\n'
        '\ttrace_id VARCHAR(255) NOT NULL, \n'
        '\tfirst_position INTEGER NOT NULL, \n'
        '\tattempts TEXT NOT NULL, \n'
        '\tviolations TEXT NOT NULL, \n'
        '\tPRIMARY KEY (trace_id)\n'
        ')', ()),
    (
        'CREATE UNIQUE INDEX ix_ts_audit_index_position ON ts_audit_index (first_position'
        ')', ()),
    (
        'CREATE VIEW ts_attempts AS\n'
        "SELECT json_extract(s.payload, '$.attempt_id') AS attempt_id, s.trace_id AS trac"
        'e_id,\n'
        "       json_extract(s.payload, '$.api') AS api,\n"
        "       json_extract(s.payload, '$.reader') AS reader,\n"
        "       json_extract(s.payload, '$.retry_of') AS retry_of,\n"
        '       s.position AS started_position, s.recorded_at AS started_at,\n'
        '       (SELECT count(*) FROM ts_events f\n'
        "         WHERE f.stream = s.stream AND f.type = 'frame.received') AS frames,\n"
        "       json_extract(d.payload, '$.status') AS status,\n"
        "       json_extract(d.payload, '$.reasons[0]') AS first_reason,\n"
        "       json_extract(d.payload, '$.decided_at_position') AS decided_at_position,\n"
        "       json_extract(d.payload, '$.eligible') AS eligible,\n"
        '       d.position AS decision_position,\n'
        "       CASE WHEN EXISTS (SELECT 1 FROM ts_events r WHERE r.type = 'review.approv"
        "ed'\n"
        '                           AND r.trace_id = s.trace_id\n'
        "                           AND json_extract(r.payload, '$.attempt_id') = json_ex"
        "tract(s.payload, '$.attempt_id'))\n"
        "            THEN 'approved'\n"
        "            WHEN EXISTS (SELECT 1 FROM ts_events r WHERE r.type = 'review.field_"
        "set'\n"
        '                           AND r.trace_id = s.trace_id\n'
        "                           AND json_extract(r.payload, '$.attempt_id') = json_ex"
        "tract(s.payload, '$.attempt_id'))\n"
        "            THEN 'in-review' ELSE 'unreviewed' END AS review_state\n"
        'FROM ts_events s\n'
        'LEFT JOIN ts_events d ON d.position = (\n'
        '    SELECT max(x.position) FROM ts_events x\n'
        "     WHERE x.stream = s.stream AND x.type = 'release.decided')\n"
        "WHERE s.type = 'attempt.started'", ()),
    (
        'CREATE VIEW ts_destinations AS\n'
        "SELECT json_extract(w.payload, '$.attempt_id') AS attempt_id, w.trace_id AS trac"
        'e_id,\n'
        "       json_extract(w.payload, '$.destination') AS destination,\n"
        '       w.position AS position,\n'
        "       json_extract(w.payload, '$.source') AS source,\n"
        "       json_extract(w.payload, '$.sha256') AS sha256,\n"
        "       CASE WHEN json_extract(w.payload, '$.text') = 'sha256:' || json_extract(w"
        ".payload, '$.sha256') THEN NULL ELSE json_extract(w.payload, '$.text') END AS te"
        'xt\n'
        'FROM ts_events w\n'
        "WHERE w.type = 'destination.written'", ()),
    (
        'CREATE UNIQUE INDEX uq_ts_events_trace_version ON ts_events ((coalesce(trace_id,'
        " '')), trace_version)", ()),
    ('INSERT INTO "alembic_version" VALUES (?)', ('0007',)),
    ('INSERT INTO "ts_meta" VALUES (?, ?)', ('format', 'tracestore-eventlog-1')),
    ('INSERT INTO "ts_meta" VALUES (?, ?)', ('legacy_chain_end', '0')),
    ('INSERT INTO "ts_meta" VALUES (?, ?)', ('legacy_chain_head', '')),
)


def dump(dbapi_conn: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The schema of a migrated SQLite database as ``(sql, parameters)`` statements: each
    ``sqlite_master`` entry's SQL in creation order (SQLite keeps the text it was given;
    the automatic indexes of constraints have none and come back with their tables), then
    each table's rows in rowid order."""
    master = dbapi_conn.execute("SELECT type, name, sql FROM sqlite_master "
                                "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                                "ORDER BY rowid").fetchall()
    out: list[tuple[str, tuple[Any, ...]]] = [(sql, ()) for _, _, sql in master]
    for kind, name, _ in master:
        if kind != "table":
            continue
        for row in dbapi_conn.execute(f'SELECT * FROM "{name}" ORDER BY rowid'):
            marks = ", ".join("?" * len(row))
            out.append((f'INSERT INTO "{name}" VALUES ({marks})', tuple(row)))
    return tuple(out)


def render(statements: tuple[tuple[str, tuple[Any, ...]], ...]) -> str:
    """``statements`` as the Python text of ``STATEMENTS`` (lines of at most 100 chars)."""
    out = ["STATEMENTS: tuple[tuple[str, tuple[Any, ...]], ...] = ("]
    for sql, params in statements:
        pieces = [line + "\n" for line in sql.split("\n")]
        pieces[-1] = pieces[-1][:-1]
        chunks = [piece[i:i + 80] for piece in pieces for i in range(0, len(piece), 80)]
        out.append("    (" + repr(chunks[0]) if len(chunks) == 1 else "    (")
        if len(chunks) > 1:
            out += [f"        {chunk!r}" for chunk in chunks]
        out[-1] += f", {params!r}),"
    out.append(")")
    return "\n".join(out) + "\n"


def create(conn: Any) -> None:
    """Write ``STATEMENTS`` on ``conn`` (a SQLAlchemy connection in a write transaction on
    an empty SQLite database)."""
    for sql, params in STATEMENTS:
        conn.exec_driver_sql(sql, params)


__all__ = ["REVISION", "STATEMENTS", "create", "dump"]
