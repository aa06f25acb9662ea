"""Hash-partition a PostgreSQL store's growing tables (``tracestore store partition``).

``ts_events`` becomes ``PARTITION BY HASH (trace_key)`` and ``ts_blobs``
``PARTITION BY HASH (sha256)``, each with N partitions named ``<table>_p0 …``.  PostgreSQL
cannot turn a table into a partitioned one in place, so each table is rebuilt, all in ONE
transaction (a failure leaves the store as it was):

1. the append lock (exclusive: in-flight appends finish, new ones wait) and the migration
   lock are taken, and both tables are locked;
2. the views reading them are dropped (their definitions kept, ``pg_get_viewdef``);
3. a partitioned copy of each table is created (``LIKE … INCLUDING DEFAULTS INCLUDING
   CONSTRAINTS``: columns, NOT NULLs, the ``txid`` default), filled from the table, and
   takes its name once the table is dropped;
4. its unique constraints, indexes and triggers are created again from the definitions
   the table had (``pg_get_constraintdef``, ``pg_get_indexdef``, ``pg_get_triggerdef``),
   under the same names, then the views.

The position sequence and ``ts_reserve_positions`` are not the tables' and are untouched.
Grants on the tables and views are not copied (a store's role normally owns them).

Every uniqueness already includes the partition key (migration 0007 for ``ts_events``;
``ts_blobs``' key is its primary key): PostgreSQL refuses a partitioned table otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracestore.errors import InputError, StoreError

if TYPE_CHECKING:
    from sqlalchemy import Connection

#: (table, partition key), in the order they are rebuilt.
PARTITIONED = (("ts_events", "trace_key"), ("ts_blobs", "sha256"))
MIN_PARTITIONS, MAX_PARTITIONS = 2, 1024


@dataclass(frozen=True)
class Partitioned:
    """What ``partition_store`` did: the tables, their key, the partition count and the
    rows each table held (moved into its partitions)."""

    url: str
    partitions: int
    tables: tuple[tuple[str, str, int], ...]  # (table, key, rows)


def check_partitions(partitions: int) -> None:
    if isinstance(partitions, bool) or not isinstance(partitions, int) or \
            not MIN_PARTITIONS <= partitions <= MAX_PARTITIONS:
        raise InputError(f"--partitions must be a whole number from {MIN_PARTITIONS} to "
                         f"{MAX_PARTITIONS}, not {partitions!r}",
                         code="partition_count_invalid", partitions=str(partitions))


def partition_store(url: str | None, partitions: int = 8) -> Partitioned:
    """Make the PostgreSQL store at ``url`` hash-partitioned into ``partitions`` (created
    and migrated first when the database is empty or older).  Refused, with nothing
    written: a count out of range (``partition_count_invalid``), a SQLite (or any
    other non-PostgreSQL) URL (``partition_needs_postgresql``), a store already partitioned
    (``store_already_partitioned``); a database refusing the rebuild rolls it back
    (``partition_refused``)."""
    from tracestore.store import engine as engines
    from tracestore.text.masking import masked_url

    check_partitions(partitions)
    resolved = engines.resolve_url(url)
    if engines.make_url(resolved).get_backend_name() != "postgresql":
        kind = "a SQLite store" if engines.is_sqlite(resolved) else "not PostgreSQL"
        raise InputError(f"{masked_url(resolved)} is {kind}: only a PostgreSQL store can be "
                         "partitioned", code="partition_needs_postgresql")
    from sqlalchemy.exc import DBAPIError

    from tracestore.store.log import EventStore

    with EventStore(resolved) as store:
        try:
            with store._writer.begin() as conn:
                moved = _partition(conn, partitions, masked_url(resolved))
        except DBAPIError as exc:
            from tracestore.store.dberrors import driver_message
            from tracestore.text.masking import mask_secrets

            raise StoreError(f"the database refused to partition {masked_url(resolved)} "
                             f"(nothing was changed): {mask_secrets(driver_message(exc))}",
                             code="partition_refused") from exc
    return Partitioned(masked_url(resolved), partitions, moved)


def is_partitioned(conn: Connection, table: str) -> bool:
    kind = conn.exec_driver_sql("SELECT relkind FROM pg_class WHERE oid = %s::regclass",
                                (table,)).scalar_one()
    return str(kind) == "p"


def _partition(conn: Connection, partitions: int, shown: str,
               ) -> tuple[tuple[str, str, int], ...]:
    from tracestore.store.log import _PG_APPEND_LOCK
    from tracestore.store.migrate import MIGRATION_LOCK_KEY

    _ddl(conn, f"SELECT pg_advisory_xact_lock({_PG_APPEND_LOCK}), "
               f"pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
    _ddl(conn, f"LOCK TABLE {', '.join(t for t, _ in PARTITIONED)} IN ACCESS EXCLUSIVE MODE")
    done = [table for table, _ in PARTITIONED if is_partitioned(conn, table)]
    if done:
        raise StoreError(f"{shown} is partitioned already ({', '.join(done)}); nothing was "
                         "changed", code="store_already_partitioned", tables=done)
    views = _dependent_views(conn, [t for t, _ in PARTITIONED])
    for name, _ in reversed(views):
        _ddl(conn, f"DROP VIEW {name}")
    moved = tuple((table, key, _rebuild(conn, table, key, partitions))
                  for table, key in PARTITIONED)
    for name, definition in views:
        _ddl(conn, f"CREATE VIEW {name} AS {definition}")
    for table, _ in PARTITIONED:
        _ddl(conn, f"ANALYZE {table}")
    return moved


def _dependent_views(conn: Connection, tables: list[str]) -> list[tuple[str, str]]:
    """The views reading ``tables`` (or reading such views), in creation order:
    ``(name, definition)``."""
    found: dict[int, tuple[str, str]] = {}
    frontier = [int(conn.exec_driver_sql("SELECT %s::regclass::oid", (t,)).scalar_one())
                for t in tables]
    while frontier:
        rows = conn.exec_driver_sql(
            "SELECT DISTINCT v.oid, v.oid::regclass::text, pg_get_viewdef(v.oid) "
            "FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid "
            "JOIN pg_class v ON v.oid = r.ev_class "
            "WHERE d.refobjid = ANY(%s) AND v.relkind = 'v' AND v.oid <> d.refobjid",
            (frontier,)).all()
        frontier = [int(oid) for oid, _, _ in rows if int(oid) not in found]
        for oid, name, definition in rows:
            found[int(oid)] = (str(name), str(definition).rstrip().rstrip(";"))
    return [found[oid] for oid in sorted(found)]


def _rebuild(conn: Connection, table: str, key: str, partitions: int) -> int:
    """``table`` as ``PARTITION BY HASH (key)`` with ``partitions`` partitions, holding
    its rows, constraints, indexes and triggers under their names; its row count."""
    oid = int(conn.exec_driver_sql("SELECT %s::regclass::oid", (table,)).scalar_one())
    constraints = conn.exec_driver_sql(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s AND contype IN ('p', 'u', 'x') ORDER BY oid", (oid,)).all()
    indexes = conn.exec_driver_sql(
        "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = %s AND "
        "NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) "
        "ORDER BY i.indexrelid", (oid,)).scalars().all()
    triggers = conn.exec_driver_sql(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = %s AND NOT tgisinternal "
        "ORDER BY oid", (oid,)).scalars().all()
    staged = f"{table}_partitioned"
    _ddl(conn, f"CREATE TABLE {staged} (LIKE {table} INCLUDING DEFAULTS INCLUDING "
               f"CONSTRAINTS INCLUDING STORAGE) PARTITION BY HASH ({key})")
    for remainder in range(partitions):
        _ddl(conn, f"CREATE TABLE {table}_p{remainder} PARTITION OF {staged} "
                   f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})")
    rows = _ddl(conn, f"INSERT INTO {staged} SELECT * FROM {table}")
    _ddl(conn, f"DROP TABLE {table}")
    _ddl(conn, f"ALTER TABLE {staged} RENAME TO {table}")
    for name, definition in constraints:
        _ddl(conn, f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    for statement in (*indexes, *triggers):
        _ddl(conn, str(statement))
    return rows


def _ddl(conn: Connection, sql: str) -> int:
    """Run one parameterless statement (a definition read from the catalog may hold
    ``%``, which the driver would take for a placeholder); the rows it touched."""
    return int(conn.exec_driver_sql(sql.replace("%", "%%"), ()).rowcount)
