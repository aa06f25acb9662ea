"""PostgreSQL bulk ingest: the library pipeline against psycopg ``executemany`` of its rows.

Prints, never asserts.  In one run, rounds interleaved, each contender in its own fresh
process and its own fresh database on the server named by ``--pg`` (or
``$TRACESTORE_TEST_PG_URL``; ``.ci/postgres.sh start`` gives a throw-away one):

* ``lib``  -- ``plan_ingest`` + ``append_plan`` of a ``make_big_projection(N)`` capture
  (``bench/ingest.py``'s input: N Bedrock frames + one drain label), what ``tracestore
  ingest`` runs after start-up: the modules are imported before the clock starts (as
  psycopg is for ``many``), opening the store (its schema check) is timed;
* ``many`` -- plain psycopg 3: the SAME rows (every column, the hash chain values
  precomputed: they are read back from the ``lib`` database before the clock starts) and
  the capture blob inserted with ``cursor.executemany`` into a fresh database migrated by
  tracestore (same tables, constraints, indexes and append-only triggers), one
  transaction, committed.

Goal: ``many`` time / ``lib`` time >= 0.6 (wall: best of each, and the
median of the ratios of each round's pair, steadier on a shared machine; client CPU is
printed too, the server's own CPU is in neither).

Run:  python bench/pg_bulk.py [--frames 100000] [--rounds 3] [--pg URL]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import make_big_projection, run_lib  # noqa: E402  (bench/ingest.py: same input, same call)

COLUMNS = ("position, id, stream, version, type, schema_version, recorded_at, trace_id, "
           "payload, hash, trace_version, trace_key")


def fresh_db(url: str) -> str:
    """A new empty database on the server of ``url`` (a SQLAlchemy URL); its URL."""
    from sqlalchemy import create_engine, text

    name = f"ts_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return url.rsplit("/", 1)[0] + "/" + name


def drop_db(url: str) -> None:
    from sqlalchemy import create_engine, text

    base, name = url.rsplit("/", 1)
    admin = create_engine(base + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def load_rows(source: str) -> tuple[list[tuple], list[tuple]]:
    import psycopg

    with psycopg.connect(libpq(source)) as conn:
        rows = conn.execute(f"SELECT {COLUMNS} FROM ts_events ORDER BY position").fetchall()
        blobs = conn.execute("SELECT sha256, size, data FROM ts_blobs").fetchall()
    return rows, blobs


def run_many(rows: list[tuple], blobs: list[tuple], db: str) -> int:
    import psycopg

    with psycopg.connect(libpq(db)) as conn:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO ts_blobs (sha256, size, data) VALUES (%s, %s, %s)",
                            blobs)
            cur.executemany(f"INSERT INTO ts_events ({COLUMNS}) VALUES "
                            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
        conn.commit()
    return len(rows)


def child(name: str, path: Path, db: str, source: str | None) -> None:
    """One contender in this (fresh) process: seconds, client CPU and count as JSON."""
    if name == "many":
        from tracestore.store.log import EventStore

        EventStore(db).close()  # the schema, migrated by tracestore (not timed)
        assert source is not None
        rows, blobs = load_rows(source)
        work = lambda: run_many(rows, blobs, db)  # noqa: E731
    else:
        # Imported before the clock, as psycopg is for ``many``: a library caller has them.
        import tracestore.ingest.pipeline  # noqa: F401
        import tracestore.store.log  # noqa: F401

        work = lambda: run_lib(path, db)  # noqa: E731
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    count = work()
    elapsed = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - usage0.ru_utime - usage0.ru_stime
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "count": count}))


def measure(name: str, path: Path, db: str, source: str | None = None) -> dict:
    argv = [sys.executable, __file__, "--one", name, str(path), db, source or "-"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pg", default=os.environ.get("TRACESTORE_TEST_PG_URL"))
    parser.add_argument("--one", nargs=4, metavar=("NAME", "FILE", "DB", "SOURCE"))
    args = parser.parse_args()
    if args.one:
        name, file, db, source = args.one
        child(name, Path(file), db, None if source == "-" else source)
        return
    if not args.pg:
        raise SystemExit("no PostgreSQL server: pass --pg URL or set TRACESTORE_TEST_PG_URL")
    results: dict[str, list[dict]] = {"lib": [], "many": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"projection-{args.frames}.json"
        path.write_bytes(make_big_projection(args.frames))
        for _ in range(args.rounds):
            lib_db, many_db = fresh_db(args.pg), fresh_db(args.pg)
            try:
                results["lib"].append(measure("lib", path, lib_db))
                results["many"].append(measure("many", path, many_db, lib_db))
            finally:
                drop_db(lib_db), drop_db(many_db)
    best = {n: min(r["seconds"] for r in rs) for n, rs in results.items()}
    cpu = {n: min(r["cpu"] for r in rs) for n, rs in results.items()}
    count = results["lib"][0]["count"]
    print(f"PostgreSQL, {args.frames:,} frames + 1 label ({count:,} events), best of "
          f"{args.rounds} interleaved rounds:")
    for name in ("lib", "many"):
        print(f"  {name:<4} {count / best[name]:>9,.0f} events/s  {best[name]:6.2f} s wall  "
              f"client CPU {cpu[name]:6.2f} s")
    paired = sorted(m["seconds"] / lib["seconds"] for lib, m in zip(results["lib"],
                                                                    results["many"]))
    print(f"  lib/many {best['many'] / best['lib']:.2f}x wall (best of each), "
          f"median of the per-round ratios {statistics.median(paired):.2f}x "
          f"(range {paired[0]:.2f}-{paired[-1]:.2f}), "
          f"{cpu['many'] / cpu['lib']:.2f}x client CPU   (goal >= 0.6, issue 25 item 3)")


if __name__ == "__main__":
    main()
