"""The review queue on a large store: ``attempts --status held --json`` and
``reviews --state stale --json`` against one raw indexed SQL query.

Prints, never asserts.  A store of N attempts is built per size: N - 10 attempts of the
Bedrock projection ``fixtures/projections/t1.json`` under a task rule that accepts it
(released), and 10 under a rule it fails... no: 10 whose trace has no task rule (held:
``no_task_rule``); 10 of the released ones get a reviewed, approved, then amended
trace-review record (stale).  The queue index (migration 0002) is built once (its build
time is printed: it is paid once, then kept up to date by appends); then, rounds
interleaved, each command is run in-process (its Typer command function, opening the
store included; JSON written to an in-memory sink) and timed against the raw ``sqlite3``
connect + indexed query + ``json.dumps`` over the same table in the same process:

* ``attempts --status held --json``  vs ``SELECT … FROM ts_attempt_index WHERE status = ?``
* ``reviews --state stale --json``   vs ``SELECT … FROM ts_review_index WHERE state = ?``

Goal: ours <= 2x the raw query, and flat from 1k to 100k attempts (both filters match
10 rows).

Run:  python bench/review_queue.py [--attempts 1000,100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
T1 = ROOT / "fixtures" / "projections" / "t1.json"
MATCHING = 10


def build_store(path: Path, attempts: int) -> float:
    """The store, and the seconds the first queue-index build took."""
    from tracestore.events import NewEvent, TaskRule, TraceOpened, trace_stream
    from tracestore.ingest import plan_ingest
    from tracestore.store.log import EventStore

    data = T1.read_bytes()
    rule = TaskRule(description="desk hours", answer_patterns=("Wednesday",))
    with EventStore(f"sqlite:///{path}") as store:
        def events():  # one append: one transaction
            for n in range(attempts):
                if n >= MATCHING:  # a trace with a rule: the attempt is judged (released)
                    yield NewEvent(trace_stream(f"t{n}"), TraceOpened(trace_id=f"t{n}",
                                                                       task=rule),
                                   trace_id=f"t{n}")
                plan = plan_ingest(data, filename="t1.json", attempt_id=f"a{n}",
                                   trace_id=f"t{n}")
                yield from plan.events
        store.append(events(), blob_data=[data])
        from tracestore.review import queue_index as qi

        start = time.perf_counter()
        qi.sync(store)
        build = time.perf_counter() - start
        from tracestore.cli.review_cmds import amend
        from tracestore.review import load_template

        template = load_template()
        for n in range(MATCHING, 2 * MATCHING):  # approved, then amended: stale
            amend(store, template, f"a{n}", f"t{n}", sets=[], approve=True, reviewer="bob",
                  evidence=[])
            amend(store, template, f"a{n}", f"t{n}", sets=[("evidence_gap", "readback")],
                  approve=False, reviewer="alice", evidence=[])
        qi.sync(store)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return build


# The command a user runs, in-process: the Typer command function itself (``attempts``,
# ``reviews`` with their options), so opening the store -- URL checks, schema check, the
# index freshness check -- is counted, as it is paid on every run.  Interpreter start-up
# and imports are not (bench/startup.py measures those).
def ours_attempts(db: str) -> None:
    from tracestore.cli.log_cmds import attempts

    attempts(status="held", reason=None, api=None, trace=None, since=None, until=None,
             has_violations=None, review_state=None, violation=None, db=db, as_json=True)


def ours_reviews(db: str) -> None:
    from tracestore.cli.queue_cmds import reviews

    reviews(state="stale", template=None, trace=None, db=db, as_json=True)


_OPEN: dict[str, object] = {}


def ours_open_attempts(db: str) -> None:
    """The same queries on a store already open: what the command does beyond opening it."""
    from tracestore.review import queue_index as qi
    from tracestore.cli.common import emit_json

    store = _OPEN[db]
    qi.sync(store)  # type: ignore[arg-type]
    emit_json({"attempts": qi.query_attempts(store, status="held")})  # type: ignore[arg-type]


def ours_open_reviews(db: str) -> None:
    from tracestore.review import queue_index as qi
    from tracestore.cli.common import emit_json

    store = _OPEN[db]
    qi.sync(store)  # type: ignore[arg-type]
    emit_json({"reviews": qi.query_reviews(store, state="stale")})  # type: ignore[arg-type]


def raw(db: str, sql: str, value: str) -> None:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute(sql, (value,))]
    conn.close()
    sys.stdout.write(json.dumps({"rows": rows}) + "\n")


RAW_ATTEMPTS = "SELECT * FROM ts_attempt_index WHERE status = ? ORDER BY first_position"
RAW_REVIEWS = "SELECT * FROM ts_review_index WHERE state = ? ORDER BY last_position"


def timed(func, *args) -> tuple[float, str]:
    sink = io.StringIO()
    start = time.perf_counter()
    with redirect_stdout(sink):
        func(*args)
    return time.perf_counter() - start, sink.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(x) for x in args.attempts.split(",")):
            path = Path(tmp) / f"q{size}.db"
            start = time.perf_counter()
            build = build_store(path, size)
            print(f"{size} attempts: store built in {time.perf_counter() - start:.1f}s "
                  f"(queue index first build {build:.1f}s)")
            db = str(path)
            from tracestore.store.log import EventStore

            _OPEN[db] = EventStore(db, create=False)
            for label, ours, opened, sql, value, key in (
                    ("attempts --status held --json", ours_attempts, ours_open_attempts,
                     RAW_ATTEMPTS, "held", "attempts"),
                    ("reviews --state stale --json", ours_reviews, ours_open_reviews,
                     RAW_REVIEWS, "stale", "reviews")):
                mine, warm, theirs = [], [], []
                for _ in range(args.rounds):
                    t, out = timed(ours, db)
                    mine.append(t)
                    matched = len(json.loads(out)[key])
                    warm.append(timed(opened, db)[0])
                    theirs.append(timed(raw, db, sql, value)[0])
                m, w, r = (statistics.median(x) for x in (mine, warm, theirs))
                print(f"  {label:32} ours {m * 1000:6.2f} ms (store already open: "
                      f"{w * 1000:5.2f} ms)  raw indexed query {r * 1000:5.2f} ms  ratio "
                      f"{m / r:4.2f}x (open: {w / r:4.2f}x)  ({matched} rows)")
            _OPEN.pop(db).close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
