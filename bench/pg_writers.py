"""N writer processes recording into ONE PostgreSQL database, against plain psycopg inserts.

Prints, never asserts.  For each writer count (``--writers 1 8 32``), in interleaved rounds
(``ours``, ``raw``, ``raw2``, then the reverse order in the next round), each contender
gets a fresh database on the server named by ``--pg`` (or ``$TRACESTORE_TEST_PG_URL``) and N
forked processes that start together and write for ``--seconds``:

* ``ours`` -- each process opens a ``tracestore.Recorder`` and records its own traces
  through the public API: ``trace.attempt(...)``, the capture fed in ``--chunks`` pieces,
  ``drain()``; one trace per attempt, as a service answering many users does.  Each call
  is one append (its own transaction).
* ``raw``  -- each process inserts the SAME rows (the event rows one recorded attempt
  stores, read from a probe recording before the clock starts, with fresh ids per
  attempt) with plain psycopg into a single table with the same columns (``position`` a
  server-side identity, the id unique), one transaction per recorder call, as the
  recorder commits them; no shared lock, no hash chain, no blob.
* ``raw2`` -- ``raw`` again: the A/A control, whose difference from ``raw`` is the noise
  floor of the run.
* ``floor`` (with ``--floor``) -- the design's own database work for the same rows without
  the recorder: the append line's two messages per call (locks, reserved positions, heads,
  versions; then the rows, the capture pieces and COMMIT) sent with libpq directly, no
  decoding, judging or hashing.  ``floor / raw`` bounds what any writer of this design
  could reach on this machine.

Per contender: events/s (rows stored / wall time of the round), the median latency of
one append (one recorder call, one raw transaction), the writer processes' own CPU time per
event stored, the server's CPU time per event stored (the round's backends, read from
``/proc`` while they run: only when the server runs on this machine; a backend's first
sample is its baseline, so its start-up is not counted), and how many backends of the round's
database were waiting on a lock (``pg_stat_activity.wait_event_type = 'Lock'``, sampled
every 20 ms by the parent: median and max).  The ratio is ours / raw events/s per round
(the median of the rounds and its range), and raw2 / raw for the control.

Run:  python bench/pg_writers.py [--writers 1 8 32] [--rounds 2] [--seconds 6] [--floor]
      [--pg URL]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
from hashlib import sha256
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pg_bulk import drop_db, fresh_db, libpq  # noqa: E402  (bench/pg_bulk.py)

CAPTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "real" / "anthropic"
           / "text-basic.sse")
RAW_TABLE = """CREATE TABLE raw_events (
    position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id varchar(64) NOT NULL UNIQUE, stream varchar(255) NOT NULL, version integer NOT NULL,
    type varchar(64) NOT NULL, schema_version integer NOT NULL,
    recorded_at varchar(40) NOT NULL, trace_id varchar(255), payload text NOT NULL,
    hash varchar(64) NOT NULL)"""
RAW_INSERT = ("INSERT INTO raw_events (id, stream, version, type, schema_version, recorded_at, "
              "trace_id, payload, hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)")


def pieces(data: bytes, chunks: int) -> list[bytes]:
    size = -(-len(data) // chunks)
    return [data[i:i + size] for i in range(0, len(data), size)]


def probe_calls(chunks: int) -> list[list[tuple[Any, ...]]]:
    """The event rows each recorder call of one attempt stores (attempt, feeds, drain),
    recorded into a private in-memory store: the raw contender's rows."""
    from tracestore import Recorder

    recorder = Recorder("sqlite://")
    store = recorder.store
    calls: list[list[tuple[Any, ...]]] = []
    seen = 0

    def mark() -> None:
        nonlocal seen
        rows = [r for r in store.iter_rows() if r["position"] > seen]
        seen = max([seen] + [r["position"] for r in rows])
        calls.append([(r["id"], r["stream"], r["version"], r["type"], r["schema_version"],
                       r["recorded_at"], r["trace_id"], r["payload"], r["hash"])
                      for r in rows])

    trace = recorder.trace("probe")
    attempt = trace.attempt("probe", api="anthropic-messages")
    mark()
    for piece in pieces(CAPTURE.read_bytes(), chunks):
        attempt.feed(piece)
        mark()
    attempt.drain()
    mark()
    recorder.close()
    return [rows for rows in calls if rows]


def timed(go: Any, deadline_box: Any,
          attempt: Callable[[str, list[float]], None]) -> tuple[list[float], float]:
    """Once ``go`` is set, ``attempt(index, latencies)`` again and again until the
    deadline (``index`` "0", "1", …): the latencies it appended and the CPU seconds spent."""
    latencies: list[float] = []
    go.wait()
    cpu = time.process_time()
    deadline = deadline_box.value
    index = 0
    while time.time() < deadline:
        attempt(str(index), latencies)
        index += 1
    return latencies, time.process_time() - cpu


def ours(url: str, worker: int, chunks: int, go: Any, deadline_box: Any,
         out: Any) -> None:
    from tracestore import Recorder

    data = pieces(CAPTURE.read_bytes(), chunks)
    recorder = Recorder(url)
    clock = time.perf_counter

    def attempt_once(index: str, latencies: list[float]) -> None:
        trace = recorder.trace(f"w{worker}-{index}")
        start = clock()
        attempt = trace.attempt(f"w{worker}-{index}", api="anthropic-messages")
        latencies.append(clock() - start)
        for piece in data:
            start = clock()
            attempt.feed(piece)
            latencies.append(clock() - start)
        start = clock()
        attempt.drain()
        latencies.append(clock() - start)

    latencies, cpu = timed(go, deadline_box, attempt_once)
    recorder.close()
    out.put((latencies, time.time(), cpu))


def raw(url: str, worker: int, calls: list[list[tuple[Any, ...]]], go: Any,
        deadline_box: Any, out: Any) -> None:
    import psycopg

    clock = time.perf_counter
    with psycopg.connect(libpq(url)) as conn:
        def attempt_once(index: str, latencies: list[float]) -> None:
            tag = f"w{worker}-{index}"
            for rows in calls:
                fresh = [(f"{tag}-{row[0]}", f"{tag}-{row[1]}", *row[2:6], tag, *row[7:])
                         for row in rows]
                start = clock()
                with conn.cursor() as cursor:
                    cursor.executemany(RAW_INSERT, fresh)
                conn.commit()
                latencies.append(clock() - start)

        latencies, cpu = timed(go, deadline_box, attempt_once)
    out.put((latencies, time.time(), cpu))


def backend_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of a server process on this machine, or None."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def floor(url: str, worker: int, calls: list[list[tuple[Any, ...]]], chunks: int,
          go: Any, deadline_box: Any, out: Any) -> None:
    """The design's own database work without the recorder: per call, the append line's
    two messages (``store.pg_append``: the locks, positions, heads and versions, then the
    rows and the capture pieces with COMMIT) on a libpq connection, for the same rows with
    fresh ids, traces and streams -- no decoding, judging, folding or hashing (the hash
    column holds the probe's)."""
    import psycopg

    from tracestore.store.pg_append import insert_message, locking_message

    blobs_of = [[]] + [[(sha256(piece).hexdigest(), piece)]
                       for piece in pieces(CAPTURE.read_bytes(), chunks)]
    clock = time.perf_counter
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        pgconn = conn.pgconn

        def attempt_once(index: str, latencies: list[float]) -> None:
            tag = f"w{worker}-{index}"
            versions: dict[str, int] = {}
            for number, rows in enumerate(calls):
                streams = sorted({f"{tag}-{row[1]}" for row in rows})
                unknown = [stream for stream in streams if stream not in versions]
                ids = [f"{tag}-{row[0]}" for row in rows] if number == 0 else []
                start = clock()
                answer = pgconn.exec_(locking_message(7_245_001, [tag], len(rows), unknown,
                                                      ids).encode())
                got = {(answer.get_value(i, 0), answer.get_value(i, 1)): answer.get_value(i, 2)
                       for i in range(answer.ntuples)}
                position = int(got[(b"p", None)]) - 1
                trace_version = int(got.get((b"h", tag.encode()), b"0"))
                for stream in unknown:
                    versions[stream] = int(got.get((b"v", stream.encode()), b"0"))
                fresh = []
                for row in rows:
                    stream = f"{tag}-{row[1]}"
                    position, trace_version = position + 1, trace_version + 1
                    versions[stream] += 1
                    fresh.append((position, f"{tag}-{row[0]}", stream, versions[stream],
                                  row[3], row[4], row[5], tag, row[7], row[8], trace_version,
                                  tag))
                done = pgconn.exec_(insert_message(
                    blobs_of[number] if number < len(blobs_of) else [], fresh).encode())
                if done.status != psycopg.pq.ExecStatus.COMMAND_OK:
                    raise SystemExit(f"floor: {done.error_message.decode()}")
                latencies.append(clock() - start)

        latencies, cpu = timed(go, deadline_box, attempt_once)
    out.put((latencies, time.time(), cpu))


def sample_lock_waits(url: str, stop: threading.Event, samples: list[int],
                      server_cpu: dict[int, tuple[float, float]]) -> None:
    """Every 20 ms: how many of the database's backends wait on a lock, and each
    backend's CPU so far (``server_cpu``: pid -> (first seen, last seen); readable only
    when the server runs on this machine)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        me = conn.info.backend_pid
        while not stop.is_set():
            rows = conn.execute("SELECT pid, wait_event_type = 'Lock' FROM pg_stat_activity "
                                "WHERE datname = %s AND pid <> %s", (name, me)).fetchall()
            samples.append(sum(1 for _, waiting in rows if waiting))
            for pid, _ in rows:
                used = backend_cpu(pid)
                if used is not None:
                    server_cpu[pid] = (server_cpu.get(pid, (used, used))[0], used)
            stop.wait(0.02)


def one_round(kind: str, base: str, writers: int, seconds: float, chunks: int,
              calls: list[list[tuple[Any, ...]]]) -> dict[str, float]:
    import psycopg

    from tracestore.store.log import EventStore

    url = fresh_db(base)
    try:
        if kind in ("ours", "floor"):
            EventStore(url).close()  # the schema, migrated before the writers start
            table = "ts_events"
        else:
            with psycopg.connect(libpq(url), autocommit=True) as conn:
                conn.execute(RAW_TABLE)
            table = "raw_events"
        context = multiprocessing.get_context("fork")
        go, out = context.Event(), context.Queue()
        deadline = context.Value("d", 0.0)
        procs = []
        for worker in range(writers):
            args = ((url, worker, chunks, go, deadline, out) if kind == "ours"
                    else (url, worker, calls, chunks, go, deadline, out) if kind == "floor"
                    else (url, worker, calls, go, deadline, out))
            target = {"ours": ours, "floor": floor, "raw": raw}[kind]
            procs.append(context.Process(target=target, args=args))
        for proc in procs:
            proc.start()
        time.sleep(0.5 + writers * 0.05)  # every writer imported and connected
        samples: list[int] = []
        server_cpu: dict[int, tuple[float, float]] = {}
        stop = threading.Event()
        sampler = threading.Thread(target=sample_lock_waits,
                                   args=(url, stop, samples, server_cpu))
        sampler.start()
        started = time.time()
        deadline.value = started + seconds
        go.set()
        reports = [out.get(timeout=seconds + 120) for _ in procs]
        stop.set()
        sampler.join()
        for proc in procs:
            proc.join()
        if any(proc.exitcode for proc in procs):
            raise SystemExit(f"{kind}: a writer failed (exit codes "
                             f"{[p.exitcode for p in procs]})")
        elapsed = max(end for _, end, _ in reports) - started
        with psycopg.connect(libpq(url)) as conn:
            count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        latencies = [x for got, _, _ in reports for x in got]
        return {"rate": count / elapsed, "events": count,
                "cpu_us": sum(cpu for _, _, cpu in reports) / max(count, 1) * 1e6,
                "server_us": sum(last - first for first, last in server_cpu.values())
                / max(count, 1) * 1e6,
                "p50_ms": statistics.median(latencies) * 1000,
                "waiting_median": statistics.median(samples) if samples else 0,
                "waiting_max": max(samples, default=0)}
    finally:
        drop_db(url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="how long each contender writes in a round")
    parser.add_argument("--chunks", type=int, default=2,
                        help="pieces the capture is fed in (each one append)")
    parser.add_argument("--no-control", action="store_true", help="skip the A/A raw2")
    parser.add_argument("--floor", action="store_true",
                        help="also run the design's database work alone (see floor())")
    parser.add_argument("--pg", default=os.environ.get("TRACESTORE_TEST_PG_URL"))
    args = parser.parse_args()
    if not args.pg:
        raise SystemExit("no PostgreSQL server: pass --pg URL or set TRACESTORE_TEST_PG_URL")
    import psycopg  # noqa: F401 - imported before the writers fork, as tracestore is

    import tracestore.recording.recorder  # noqa: F401
    import tracestore.store.log  # noqa: F401

    calls = probe_calls(args.chunks)
    kinds = ["ours", "raw"] + ([] if args.no_control else ["raw2"]) + \
        (["floor"] if args.floor else [])
    per_attempt = sum(len(rows) for rows in calls)
    print(f"PostgreSQL, {CAPTURE.name} fed in {args.chunks} pieces: {len(calls)} appends, "
          f"{per_attempt} events an attempt; {args.rounds} interleaved rounds of "
          f"{args.seconds:g} s per contender")
    started = time.perf_counter()
    for writers in args.writers:
        results: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
        for index in range(args.rounds):
            for kind in (kinds if index % 2 == 0 else kinds[::-1]):
                results[kind].append(one_round(kind.rstrip("2"), args.pg, writers,
                                               args.seconds, args.chunks, calls))
        print(f"{writers} writer{'s' if writers > 1 else ''}:")
        for kind in kinds:
            got = results[kind]
            rates = [r["rate"] for r in got]
            print(f"  {kind:<4} {statistics.median(rates):>8,.0f} events/s "
                  f"(rounds {', '.join(f'{r:,.0f}' for r in rates)}), append p50 "
                  f"{statistics.median(r['p50_ms'] for r in got):6.2f} ms, writers' CPU "
                  f"{statistics.median(r['cpu_us'] for r in got):5.0f} us/event, server's "
                  f"{statistics.median(r['server_us'] for r in got):5.0f} us/event, waiting on a "
                  f"lock: median {statistics.median(r['waiting_median'] for r in got):g}, "
                  f"max {max(r['waiting_max'] for r in got):g}")
        ratios = sorted(o["rate"] / r["rate"] for o, r in zip(results["ours"], results["raw"]))
        line = (f"  ours/raw {statistics.median(ratios):.2f}x events/s "
                f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")
        if "raw2" in results:
            control = sorted(c["rate"] / r["rate"]
                             for c, r in zip(results["raw2"], results["raw"]))
            line += (f"; A/A raw2/raw {statistics.median(control):.2f}x "
                     f"(range {control[0]:.2f}-{control[-1]:.2f})")
        if "floor" in results:
            floors = sorted(f["rate"] / r["rate"] for f, r in zip(results["floor"],
                                                                    results["raw"]))
            line += (f"; floor/raw {statistics.median(floors):.2f}x "
                     f"(range {floors[0]:.2f}-{floors[-1]:.2f})")
        print(line, flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
