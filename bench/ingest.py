"""Ingest throughput and attempt-load scaling of the event store.

Prints, never asserts.  Every figure is a ratio against a baseline measured in the same run:

1. 100,000 ``frame.received`` events appended in ONE ingest through ``EventStore.append``
   (pydantic validation, canonical JSON, SHA-256 chain, SQLAlchemy) against
   a. plain ``sqlite3`` ``executemany`` of rows of the same shape and size into a table with
      the same constraints, WAL, one transaction (goal: ours >= 0.33 of it);
   b. the ``eventsourcing`` library's SQLite application recorder inserting the same
      payloads in one call (goal: ours >= 1.0 of it).
2. Loading one attempt's events (100 events) from a store of 1,000,000 events against a
   store of 1,000 events (goal: at most 2x — an index lookup, not a scan).

Run:  pip install -e '.[bench]' && python bench/ingest.py [--events N] [--big N]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from tracestore.events import FrameReceived, NewEvent, attempt_stream, new_event_id
from tracestore.bulk import paused_gc
from tracestore.store.log import EventStore, canonical_payload

DELTA = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "


def make_events(count: int, attempt: str = "bench") -> list[NewEvent]:
    return [
        NewEvent(attempt_stream(attempt), FrameReceived(
            attempt_id=attempt, api="bedrock-converse-stream",
            native={"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": DELTA},
                                          "p": "abcdefghij"}},
            kinds=("text_delta",), reader="ingest", index=n), trace_id=attempt)
        for n in range(count)
    ]


def time_tracestore(folder: Path, count: int) -> float:
    store = EventStore(f"sqlite:///{folder / 'ours.db'}")
    start = time.perf_counter()
    with paused_gc():  # as `tracestore ingest` builds its plan
        batch = make_events(count)  # building (validating) the models is part of our cost
    store.append(batch)
    elapsed = time.perf_counter() - start
    assert store.head_position() == count
    store.close()
    return elapsed


def time_raw_sqlite(folder: Path, count: int) -> float:
    conn = sqlite3.connect(folder / "raw.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(
        "CREATE TABLE ev (position INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
        "stream TEXT NOT NULL, version INTEGER NOT NULL, type TEXT NOT NULL, "
        "schema_version INTEGER NOT NULL, recorded_at TEXT NOT NULL, trace_id TEXT, "
        "payload TEXT NOT NULL, hash TEXT NOT NULL, UNIQUE(stream, version))")
    conn.execute("CREATE INDEX ix_trace ON ev (trace_id, position)")
    payload = canonical_payload(make_events(1)[0].event).decode("utf-8")  # same size as ours
    start = time.perf_counter()
    with paused_gc():
        rows = [(n + 1, new_event_id(), "attempt:bench", n + 1, "frame.received", 1,
                 "2026-11-30T00:00:00.000000+00:00", "bench", payload, "0" * 64)
                for n in range(count)]
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO ev VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def time_eventsourcing(folder: Path, count: int) -> float | None:
    try:
        from eventsourcing.persistence import StoredEvent
        from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore
    except ImportError:
        return None
    datastore = SQLiteDatastore(str(folder / "es.db"))
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    originator = uuid.uuid4()
    start = time.perf_counter()
    # Same work as ours up to the recorder: build and serialise each event's state.
    with paused_gc():  # the same event building as ours, under the same GC setting
        stored = [StoredEvent(originator, n + 1, "tracestore.events:FrameReceived",
                              canonical_payload(event.event))
                  for n, event in enumerate(make_events(count))]
    recorder.insert_events(stored)
    return time.perf_counter() - start


def build_big_store(path: Path, total: int, per_attempt: int) -> None:
    """Fill a store fast with raw inserts of valid rows (the lookup is what we measure)."""
    store = EventStore(f"sqlite:///{path}")
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    payload_for = {}
    conn.execute("BEGIN IMMEDIATE")
    batch = []
    for position in range(1, total + 1):
        attempt = f"a{(position - 1) // per_attempt}"
        version = (position - 1) % per_attempt + 1
        if attempt not in payload_for:
            payload_for = {attempt: json.dumps(
                {"type": "frame.received", "attempt_id": attempt, "api": "x",
                 "native": {"n": 1}, "kinds": [], "event_name": None, "reader": None,
                 "index": None, "capture_sha256": None, "offset": None, "length": None,
                 "observed_at": None}, separators=(",", ":"))}
        batch.append((position, str(uuid.uuid4()), f"attempt:{attempt}", version,
                      "frame.received", 1, "2026-11-30T00:00:00+00:00", attempt,
                      payload_for[attempt], "0" * 64))
        if len(batch) == 50_000:
            conn.executemany("INSERT INTO ts_events VALUES (?,?,?,?,?,?,?,?,?,?)", batch)
            batch = []
    if batch:
        conn.executemany("INSERT INTO ts_events VALUES (?,?,?,?,?,?,?,?,?,?)", batch)
    conn.execute("COMMIT")
    conn.close()


def time_attempt_load(path: Path, attempt: str, repeats: int = 30) -> float:
    store = EventStore(f"sqlite:///{path}")
    store.read(attempt_id=attempt)  # warm the connection and page cache
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        loaded = store.read(attempt_id=attempt)
        samples.append(time.perf_counter() - start)
    assert len(loaded) == 100
    store.close()
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds; the best time of each contender counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        timings: dict[str, list[float]] = {"ours": [], "raw": [], "es": []}
        for round_no in range(args.rounds):
            # Interleave the contenders so load from other processes hits all of them.
            round_dir = folder / f"round{round_no}"
            round_dir.mkdir()
            timings["ours"].append(time_tracestore(round_dir, args.events))
            timings["raw"].append(time_raw_sqlite(round_dir, args.events))
            es_time = time_eventsourcing(round_dir, args.events)
            if es_time is not None:
                timings["es"].append(es_time)
        ours, raw = min(timings["ours"]), min(timings["raw"])
        es = min(timings["es"]) if timings["es"] else None
        print(f"ingest of {args.events:,} frame events in one transaction "
              f"(best of {args.rounds} interleaved rounds)")
        print(f"  tracestore           {args.events / ours:>10,.0f} events/s  ({ours:.2f} s)")
        print(f"  raw sqlite3          {args.events / raw:>10,.0f} events/s  ({raw:.2f} s)")
        print(f"  ratio ours/raw       {raw / ours:>10.2f}   (goal >= 0.33)")
        if es is None:
            print("  eventsourcing        not installed (pip install -e '.[bench]')")
        else:
            print(f"  eventsourcing        {args.events / es:>10,.0f} events/s  ({es:.2f} s)")
            print(f"  ratio ours/es        {es / ours:>10.2f}   (goal >= 1.0)")
        small, big = folder / "small.db", folder / "big.db"
        build_big_store(small, 1_000, 100)
        build_big_store(big, args.big, 100)
        t_small = time_attempt_load(small, "a5")
        t_big = time_attempt_load(big, f"a{args.big // 200}")
        print(f"load one attempt (100 events): store of 1,000 {t_small * 1e3:.2f} ms, "
              f"store of {args.big:,} {t_big * 1e3:.2f} ms")
        print(f"  ratio big/small      {t_big / t_small:>10.2f}   (goal <= 2.0)")


if __name__ == "__main__":
    main()
