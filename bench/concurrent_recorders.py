"""N processes record live attempts into ONE store at once.

    python bench/concurrent_recorders.py [--processes 8] [--attempts 250]
        [--attempts-per-trace 1] [--db URL]...

Defaults: 8 processes x 1000 appends each (250 attempts x 4 recorder calls) = 8000 appends.
``--attempts-per-trace 125`` puts each writer's attempts into traces of 125 attempts (one
question retried many times): each release decision then concerns a long trace, which is
what once made SQLite writers fail with "database is locked".

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


def _worker(url: str, worker: int, attempts: int, per_trace: int,
            queue: multiprocessing.Queue) -> None:
    """Record, then report ``(latencies, error)``: a writer that fails says so instead of
    leaving the parent waiting on the queue forever."""
    latencies: list[float] = []
    try:
        _record(url, worker, attempts, per_trace, latencies)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the run
        queue.put((latencies, f"writer {worker}: {type(exc).__name__}: {exc}"))
    else:
        queue.put((latencies, None))


def _record(url: str, worker: int, attempts: int, per_trace: int,
            latencies: list[float]) -> None:
    from tracestore import Recorder

    data = CAPTURE.read_bytes()
    half = len(data) // 2
    recorder = Recorder(url)
    clock = time.perf_counter
    trace = None
    for index in range(attempts):
        # By default one question (trace) per attempt, as an application answering many
        # users does; with per_trace > 1 the next attempts retry the same question.
        if index % per_trace == 0:
            trace = recorder.trace(f"w{worker}-{index // per_trace}")
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
    if url.startswith("sqlite") and positions != list(range(1, len(events) + 1)):
        problems.append("positions are not contiguous from 1")
    if positions != sorted(set(positions)):  # PostgreSQL: a refused append leaves a gap
        problems.append("positions do not rise")
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
    problems += _decision_problems(events)
    return problems


def _decision_problems(events: list) -> list[str]:
    """Each attempt's one recorded decision must be what the projection recomputes."""
    from collections import defaultdict

    from tracestore.projections.release import decide_all
    from tracestore.ingest.decisions import recorded_disagreements

    by_trace: dict[str, list] = defaultdict(list)
    for stored in events:
        by_trace[stored.trace_id].append(stored)
    disagreeing = sum(bool(recorded_disagreements(trace, d.attempt_id, d))
                      for trace_id, trace in by_trace.items()
                      for d in decide_all(trace, trace_id))
    return [f"{disagreeing} recorded decisions disagree with the projection"] \
        if disagreeing else []


def run(url: str, processes: int, attempts: int, per_trace: int = 1) -> bool:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    from tracestore.store.log import EventStore

    EventStore(url).close()  # create the schema once, before the writers race
    workers = [context.Process(target=_worker, args=(url, w, attempts, per_trace, queue))
               for w in range(processes)]
    started = time.perf_counter()
    for proc in workers:
        proc.start()
    reports = [queue.get() for _ in workers]
    for proc in workers:
        proc.join()
    latencies = [x for got, _ in reports for x in got]
    errors = sorted(error for _, error in reports if error is not None)
    elapsed = time.perf_counter() - started
    failed = [p.exitcode for p in workers if p.exitcode != 0]
    problems = check(url, processes, attempts)
    if failed:
        problems.append(f"worker exit codes {failed}")
    problems += errors
    quantiles = statistics.quantiles(latencies, n=100)
    p50, p90, p99 = statistics.median(latencies), quantiles[89], quantiles[98]
    backend = url.split(":", 1)[0]
    print(f"{backend}: {processes} processes x {attempts} live attempts "
          f"({per_trace} per trace) = "
          f"{processes * attempts} attempts, {len(latencies)} appends in {elapsed:.1f} s "
          f"({len(latencies) / elapsed:.0f} appends/s)")
    print(f"  append latency p50 {p50 * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms, "
          f"p99 {p99 * 1000:.2f} ms; ratio p99/p50 = {p99 / p50:.1f}")
    print("  invariants: " + ("all hold (exact attempts and events, contiguous positions, "
                              "no duplicates, decisions recorded = recomputed, "
                              "verify ok)" if not problems
                              else "; ".join(problems)))
    return not problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--attempts", type=int, default=250)
    parser.add_argument("--attempts-per-trace", type=int, default=1)
    parser.add_argument("--db", action="append", default=[],
                        help="database URL (repeatable); default: a temp SQLite file, plus "
                             "$TRACESTORE_TEST_PG_URL when set")
    args = parser.parse_args()
    urls = list(args.db)
    with tempfile.TemporaryDirectory() as tmp:
        if not urls:
            urls.append(f"sqlite:///{tmp}/concurrent.db")
            if os.environ.get("TRACESTORE_TEST_PG_URL"):
                from pg_bulk import fresh_db  # (bench/pg_bulk.py, beside this file)

                urls.append(fresh_db(os.environ["TRACESTORE_TEST_PG_URL"]))
            else:
                print("(no TRACESTORE_TEST_PG_URL: PostgreSQL not run)")
        ok = all([run(url, args.processes, args.attempts, args.attempts_per_trace)
                for url in urls])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
