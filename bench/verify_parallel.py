"""``verify`` of a large PostgreSQL store: the single pass against the parallel pass.

Prints, never asserts.  Builds one store of ``--events`` events in a fresh database on the
server named by ``--pg`` (or ``$TRACESTORE_TEST_PG_URL``): attempts of 14 events each (the
Bedrock projection ``fixtures/projections/t1.json`` as ``ingest`` stores it, with four
more frames), each attempt its own trace with its own capture blob of
``--capture-bytes`` random bytes (with ``--captures-every K`` only every K-th attempt has
its own, the others name an earlier one's), eight attempts interleaved at a time as concurrent
recorders write them.  Rows and chain hashes are computed here (``trace_chain_hash``,
the recipe the store uses) and sent with ``COPY``; the table is then vacuumed and
analyzed, as a settled store would be.  Then, rounds interleaved (the order rotates each
round), in this process:

* ``single``  -- ``EventStore.verify(jobs=1)``: the one pass in position order;
* ``single2`` -- the same again: the A/A control, its ratio to ``single`` is the noise floor;
* ``parallel`` -- ``EventStore.verify(jobs=N)`` (``--jobs``, default: the CPUs);
* ``one-worker`` -- the parallel pass's code with ONE worker process
  (``verify_log_parallel(conn, 1)``): what reading captures a few per query instead of one
  per event gains without any parallelism (``--no-one-worker`` leaves it out).

Goal: parallel / single <= 0.6 (wall time, median of the rounds' ratios).  Every pass's
result must be the same; the script says so.

Run:  python bench/verify_parallel.py [--events 1000000] [--rounds 2] [--jobs N] [--pg URL]
      [--captures-every K] [--no-one-worker]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pg_bulk import drop_db, fresh_db, libpq  # noqa: E402  (bench/pg_bulk.py's helpers)

ROOT = Path(__file__).resolve().parent.parent
T1 = ROOT / "fixtures" / "projections" / "t1.json"
PER_ATTEMPT = 14
INTERLEAVE = 8
COLUMNS = ("position, id, stream, version, type, schema_version, recorded_at, trace_id, "
           "payload, hash, trace_version, trace_key")


def template() -> list[tuple[str, int, str, int, str]]:
    """(stream kind, stream version, type, schema version, payload) of one attempt as
    ``ingest`` stores it (attempt ``a0`` of trace ``t0``), stretched to 14 events by
    repeating four frames before the drain."""
    import sqlite3

    from tracestore.ingest import plan_ingest
    from tracestore.store.log import EventStore

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.db"
        data = T1.read_bytes()
        with EventStore(f"sqlite:///{path}") as store:
            plan = plan_ingest(data, filename="t1.json", attempt_id="a0", trace_id="t0")
            store.append(plan.events, blob_data=[data])
        conn = sqlite3.connect(path)
        rows = conn.execute("SELECT stream, type, schema_version, payload FROM ts_events "
                            "WHERE trace_id = 't0' ORDER BY position").fetchall()
        conn.close()
    frames = [row for row in rows if row[1] == "frame.received"]
    rows = rows[:-1] + frames[:PER_ATTEMPT - len(rows)] + rows[-1:]
    out, versions = [], {}
    for stream, type_name, schema_version, payload in rows:
        kind = stream.split(":", 1)[0]
        versions[kind] = versions.get(kind, 0) + 1
        out.append((kind, versions[kind], type_name, schema_version, payload))
    return out


def build(db: str, events: int, capture_bytes: int, every: int = 1) -> tuple[int, int]:
    """The store: (events, traces) written; every ``every``-th attempt has a capture of
    its own, the others name an earlier one's."""
    import hashlib
    import random

    import psycopg

    from tracestore.store.chain import trace_chain_hash
    from tracestore.store.log import EventStore

    EventStore(db).close()  # the schema, migrated by tracestore
    rows = template()
    capture_sha = next(p for _, _, t, _, p in rows if t == "capture.stored").split(
        '"sha256":"')[1][:64]
    attempts = events // PER_ATTEMPT
    at = "2026-01-01T00:00:00.000000+00:00"
    rng = random.Random(37)
    # Two connections: one COPY at a time per connection.
    with psycopg.connect(libpq(db)) as conn, psycopg.connect(libpq(db)) as bconn:
        start = conn.execute("SELECT coalesce(max(position), 0) FROM ts_events").fetchone()[0]
        position = start
        with conn.cursor() as cur, cur.copy(f"COPY ts_events ({COLUMNS}) FROM STDIN") as copy, \
                bconn.cursor() as bcur, \
                bcur.copy("COPY ts_blobs (sha256, size, data) FROM STDIN") as blobs:
            for group in range(0, attempts, INTERLEAVE):
                members = range(group, min(group + INTERLEAVE, attempts))
                prev: dict[int, str] = {}
                payloads: dict[int, list[str]] = {}
                for n in members:
                    if n % every == 0:
                        data = rng.randbytes(capture_bytes)
                        sha = hashlib.sha256(data).hexdigest()
                        blobs.write_row((sha, len(data), data))
                    payloads[n] = [
                        p.replace('"attempt_id":"a0"', f'"attempt_id":"a{n}"')
                        .replace('"trace_id":"t0"', f'"trace_id":"t{n}"')
                        .replace(capture_sha, sha).replace('"size":487', f'"size":{len(data)}')
                        for _, _, _, _, p in rows]
                for index, (kind, version, type_name, schema_version, _) in enumerate(rows):
                    for n in members:
                        position += 1
                        trace, stream = f"t{n}", f"{kind}:{'t' if kind == 'trace' else 'a'}{n}"
                        payload = payloads[n][index]
                        event_id = f"{position:032x}"
                        digest = trace_chain_hash(
                            prev.get(n, "0" * 64), position, index + 1, event_id, stream,
                            version, type_name, schema_version, at, trace, payload.encode())
                        prev[n] = digest
                        copy.write_row((position, event_id, stream, version, type_name,
                                        schema_version, at, trace, payload, digest, index + 1,
                                        trace))
        bconn.commit()
        conn.commit()
    with psycopg.connect(libpq(db), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) ts_events")
        conn.execute("VACUUM (ANALYZE) ts_blobs")
    return position, attempts


def timed(store, jobs: int):  # noqa: ANN001, ANN201 - an EventStore; its VerifyResult
    """One pass: ``jobs`` 0 is the worker path with one worker."""
    start = time.perf_counter()
    if jobs == 0:
        from tracestore.store.verify_parallel import verify_log_parallel

        with store._reader.connect() as conn:
            result = verify_log_parallel(conn, 1)
    else:
        result = store.verify(jobs=jobs)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--no-one-worker", action="store_true")
    parser.add_argument("--capture-bytes", type=int, default=2048)
    parser.add_argument("--captures-every", type=int, default=1, metavar="K",
                        help="Only every K-th attempt has a capture of its own (the others "
                             "name an earlier one's): the pass without the capture reads.")
    parser.add_argument("--pg", default=os.environ.get("TRACESTORE_TEST_PG_URL"))
    parser.add_argument("--keep", action="store_true",
                        help="Keep the store's database (its URL is printed) for --db.")
    parser.add_argument("--db", help="Time this store (built by --keep) instead of building.")
    args = parser.parse_args()
    if not args.pg:
        raise SystemExit("no PostgreSQL server: --pg URL or $TRACESTORE_TEST_PG_URL")
    from tracestore.store.log import EventStore
    from tracestore.store.verify_parallel import default_jobs

    jobs = args.jobs or default_jobs()
    db = args.db or fresh_db(args.pg)
    began = time.perf_counter()
    try:
        if args.db is None:
            start = time.perf_counter()
            total, attempts = build(db, args.events, args.capture_bytes, args.captures_every)
            captures = -(-attempts // args.captures_every)
            print(f"store: {total:,} events in {attempts:,} traces of {PER_ATTEMPT}, "
                  f"{captures:,} captures of {args.capture_bytes} bytes; built in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        if args.keep or args.db:
            print(f"store kept: --db {db}")
        print(f"{jobs} workers on {os.cpu_count()} CPUs", flush=True)
        if args.rounds < 1:  # --keep --rounds 0: only build
            return
        names = ["single", "parallel", "single2"] + ([] if args.no_one_worker
                                                     else ["one-worker"])
        jobs_of = {"single": 1, "single2": 1, "parallel": jobs, "one-worker": 0}
        times: dict[str, list[float]] = {name: [] for name in names}
        results = set()
        with EventStore(db) as store:
            for round_ in range(args.rounds):
                order = names[round_ % len(names):] + names[:round_ % len(names)]
                for name in order:
                    seconds, result = timed(store, jobs_of[name])
                    times[name].append(seconds)
                    results.add(result)
                print(f"  round {round_ + 1} ({', '.join(order)}): " + ", ".join(
                    f"{name} {times[name][-1]:.2f} s" for name in names), flush=True)
        ratio = statistics.median(p / s for p, s in zip(times["parallel"], times["single"]))
        control = statistics.median(a / s for a, s in zip(times["single2"], times["single"]))
        print(f"results identical: {'yes' if len(results) == 1 else 'NO'} "
              f"({next(iter(results)).count:,} events, ok={next(iter(results)).ok})")
        print("median wall: " + ", ".join(f"{name} {statistics.median(times[name]):.2f} s"
                                          for name in names))
        print(f"parallel/single {ratio:.2f}x (goal <= 0.6x); A/A single2/single "
              f"{control:.2f}x (median of {args.rounds} rounds)")
        if "one-worker" in names:
            one = statistics.median(o / s for o, s in zip(times["one-worker"], times["single"]))
            print(f"one-worker/single {one:.2f}x (the worker path without parallelism)")
    finally:
        if not (args.keep or args.db):
            drop_db(db)
        print(f"whole run {time.perf_counter() - began:.0f} s (the store built and dropped)")


if __name__ == "__main__":
    main()
