"""Issue 14, item 6: N processes record live attempts into ONE store at once.

    python bench/concurrent_recorders.py [--processes 8] [--attempts 250] [--db URL]...

Defaults: 8 processes x 1000 appends each (250 attempts x 4 recorder calls) = 8000 appends.

Each process opens its own ``Recorder`` and records ``--attempts`` live attempts of a
real capture, each answering its own question (trace): attempt started, the bytes fed in
two calls, drain -- four timed recorder calls per attempt, each its own transaction(s).  Afterwards the log must hold exactly
processes × attempts attempts, each with every one of its events exactly once, positions
contiguous from 1, and ``verify`` must pass.  Prints the append latency percentiles as
ratios to the median (p99/p50), since absolute times depend on the machine.

With no --db it runs a SQLite file, and PostgreSQL too when TRACESTORE_TEST_PG_URL names a
server (``eval "$(bash .ci/postgres.sh start)"`` starts a throw-away one).
Exit status 1 if any invariant fails.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

CAPTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "real" / "anthropic"
           / "text-basic.sse")


def _worker(url: str, worker: int, attempts: int, queue: multiprocessing.Queue) -> None:
    from tracestore import Recorder

    data = CAPTURE.read_bytes()
    half = len(data) // 2
    latencies: list[float] = []
    recorder = Recorder(url)
    clock = time.perf_counter
    for index in range(attempts):
        # One question (trace) per attempt, as an application answering many users does.
        trace = recorder.trace(f"w{worker}-{index}")
        start = clock()
        attempt = trace.attempt(f"w{worker}-{index}", api="anthropic-messages")
        latencies.append(clock() - start)
        for piece in (data[:half], data[half:]):
            start = clock()
            attempt.feed(piece)
            latencies.append(clock() - start)
        start = clock()
        attempt.drain()
        latencies.append(clock() - start)
    recorder.close()
    queue.put(latencies)


def expected_events_per_attempt(url: str) -> int:
    """Events one attempt of CAPTURE records, measured on a private in-memory store."""
    from tracestore import Recorder

    recorder = Recorder("sqlite://")
    data = CAPTURE.read_bytes()
    attempt = recorder.trace("probe").attempt("probe", api="anthropic-messages")  # as _worker
    attempt.feed(data[:len(data) // 2])
    attempt.feed(data[len(data) // 2:])
    attempt.drain()
    count = sum(1 for e in recorder.store.read() if e.attempt_id == "probe")
    recorder.close()
    return count


def check(url: str, processes: int, attempts: int) -> list[str]:
    """Every invariant item 6 names; returns the failures (empty when all hold)."""
    from collections import Counter

    from tracestore.store.log import EventStore

    problems: list[str] = []
    per_attempt = expected_events_per_attempt(url)
    with EventStore(url) as store:
        events = list(store.iter_events(batch_size=5000))
        result = store.verify()
    positions = [e.position for e in events]
    if positions != list(range(1, len(events) + 1)):
        problems.append("positions are not contiguous from 1")
    ids = Counter(e.id for e in events)
    if any(n > 1 for n in ids.values()):
        problems.append(f"{sum(n > 1 for n in ids.values())} duplicated event ids")
    by_attempt = Counter(e.attempt_id for e in events if e.attempt_id is not None)
    want = {f"w{w}-{i}" for w in range(processes) for i in range(attempts)}
    if set(by_attempt) != want:
        problems.append(f"{len(want - set(by_attempt))} attempts missing, "
                        f"{len(set(by_attempt) - want)} unexpected")
    wrong = [a for a, n in by_attempt.items() if n != per_attempt]
    if wrong:
        problems.append(f"{len(wrong)} attempts without exactly {per_attempt} events")
    if not result.ok:
        problems.append(f"verify failed at {result.first_broken_position}: {result.reason}")
    return problems


def run(url: str, processes: int, attempts: int) -> bool:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    from tracestore.store.log import EventStore

    EventStore(url).close()  # create the schema once, before the writers race
    workers = [context.Process(target=_worker, args=(url, w, attempts, queue))
               for w in range(processes)]
    started = time.perf_counter()
    for proc in workers:
        proc.start()
    latencies = [x for _ in workers for x in queue.get()]
    for proc in workers:
        proc.join()
    elapsed = time.perf_counter() - started
    failed = [p.exitcode for p in workers if p.exitcode != 0]
    problems = check(url, processes, attempts)
    if failed:
        problems.append(f"worker exit codes {failed}")
    quantiles = statistics.quantiles(latencies, n=100)
    p50, p90, p99 = statistics.median(latencies), quantiles[89], quantiles[98]
    backend = url.split(":", 1)[0]
    print(f"{backend}: {processes} processes x {attempts} live attempts = "
          f"{processes * attempts} attempts, {len(latencies)} appends in {elapsed:.1f} s "
          f"({len(latencies) / elapsed:.0f} appends/s)")
    print(f"  append latency p50 {p50 * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms, "
          f"p99 {p99 * 1000:.2f} ms; ratio p99/p50 = {p99 / p50:.1f}")
    print("  invariants: " + ("all hold (exact attempts and events, contiguous positions, "
                              "no duplicates, verify ok)" if not problems
                              else "; ".join(problems)))
    return not problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--attempts", type=int, default=250)
    parser.add_argument("--db", action="append", default=[],
                        help="database URL (repeatable); default: a temp SQLite file, plus "
                             "$TRACESTORE_TEST_PG_URL when set")
    args = parser.parse_args()
    urls = list(args.db)
    with tempfile.TemporaryDirectory() as tmp:
        if not urls:
            urls.append(f"sqlite:///{tmp}/concurrent.db")
            if os.environ.get("TRACESTORE_TEST_PG_URL"):
                urls.append(_fresh_pg(os.environ["TRACESTORE_TEST_PG_URL"]))
            else:
                print("(no TRACESTORE_TEST_PG_URL: PostgreSQL not run)")
        ok = all([run(url, args.processes, args.attempts) for url in urls])
    return 0 if ok else 1


def _fresh_pg(admin_url: str) -> str:
    import uuid

    from sqlalchemy import create_engine, text

    name = f"ts_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return admin_url.rsplit("/", 1)[0] + "/" + name


if __name__ == "__main__":
    sys.exit(main())
