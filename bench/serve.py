"""The desk (``tracestore serve``) on large stores.  Prints, never asserts.

* **Index with a filter**: ``GET /?status=held`` (10 matching rows) and
  ``GET /?status=released`` (a full page of 50 of ~N), answered by the desk's ASGI app
  in-process (routing, guard, the queue-index sync check, both statements, the template;
  no socket), against the raw SQL behind it: a fresh ``sqlite3`` connection running the
  same page and count statements and fetching the rows as dicts (bench/review_queue.py's
  baseline).  Goal: ours <= 2x raw, flat from 1k to 100k attempts.
* **Trace page of a 10,000-frame attempt**: ``GET /trace/t10k`` built (report model and
  HTML) against reading its events (``store.read(trace_id=…)``, the part any view pays).
  Goal: < 1 MB of HTML, built in <= 3x the read.  Also ``report --html`` of the same trace
  (read, build, render in-process, as the command does), against the same read.  Medians
  of interleaved rounds (a busy moment of a shared machine hits all three).
* **Memory**: the peak of Python allocations (tracemalloc) while answering the filtered
  index, per store size.  Goal: flat in store size.

The stores are bench/review_queue.py's (``build_store``: N attempts of the Bedrock
projection t1, 10 held, 10 stale records) plus the 10,000-frame trace of
tests/serve_scenarios.py.

Run:  python bench/serve.py [--attempts 1000,100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


review_queue = _load("review_queue", ROOT / "bench" / "review_queue.py")


def add_long_trace_cli(path: Path, frames: int, folder: Path) -> None:
    from serve_scenarios import long_attempt, write
    from typer.testing import CliRunner

    from tracestore.cli import app

    scenario = write(folder / "t10k.json", long_attempt(frames=frames))
    result = CliRunner().invoke(app, ["replay", str(scenario), "--db", str(path)])
    assert result.exit_code == 0, result.output


_LOOP = asyncio.new_event_loop()


def request(app: Any, path: str, query: str = "") -> tuple[int, bytes]:
    """One GET through the ASGI app, in-process."""
    body: list[bytes] = []
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8765")], "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 8765)}
    _LOOP.run_until_complete(app(scope, receive, send))
    return status[0], b"".join(body)


def raw_index(db: str, sql: str, count: str, params: tuple) -> int:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute(sql, params)]
    total = conn.execute(count, params).fetchone()[0]
    conn.close()
    return len(rows) + total * 0


def report_html(store: Any, trace_id: str) -> int:
    """What ``tracestore report TRACE --html FILE`` does between opening the store and
    writing the file."""
    import tracestore
    from tracestore.report.html import render_html
    from tracestore.report.model import build_report
    from tracestore.review import load_template

    events = store.read(trace_id=trace_id)
    report = build_report(events, trace_id, template=load_template("trace-review"),
                          version=tracestore.__version__)
    return len(render_html(report, version=tracestore.__version__))


def timed(func: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = func(*args)
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=10_000)
    args = parser.parse_args(argv)
    from tracestore.serve import listing
    from tracestore.serve.app import DeskConfig, desk_app
    from tracestore.store.log import EventStore

    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(x) for x in args.attempts.split(",")):
            path = Path(tmp) / f"s{size}.db"
            start = time.perf_counter()
            review_queue.build_store(path, size)
            add_long_trace_cli(path, args.frames, Path(tmp))
            print(f"{size} attempts (+ one of {args.frames} frames): store built in "
                  f"{time.perf_counter() - start:.1f}s")
            db = str(path)
            store = EventStore(db, migrate_schema=False)
            app = desk_app(DeskConfig(db=db), store)
            app.desk.banner()  # verify once, as the desk does at start
            request(app, "/")  # warm: templates compiled, queue index synced
            for status in ("held", "released"):
                f = listing.parse_filter({"status": status})
                sql, params = listing.raw_sql(store, f)
                where = sql.split(" WHERE ", 1)[1].split(" ORDER BY ")[0]
                count = f"SELECT count(*) FROM ts_attempt_index WHERE {where}"
                sql = sql.replace("%s", "?")
                ours, theirs = [], []
                for _ in range(args.rounds):
                    t, (code, page) = timed(request, app, "/", f"status={status}")
                    assert code == 200, page[:300]
                    ours.append(t)
                    theirs.append(timed(raw_index, db, sql, count, params)[0])
                tracemalloc.start()
                request(app, "/", f"status={status}")
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                rows = page.count(b"<tr data-attempt=")
                o, r = statistics.median(ours), statistics.median(theirs)
                print(f"  index ?status={status:9} ours {o * 1000:6.2f} ms  raw SQL "
                      f"{r * 1000:6.2f} ms  ratio {o / r:5.2f}x  ({rows} rows shown, "
                      f"{len(page) / 1024:.0f} KB, peak {peak / 1024:.0f} KB allocated)")
            request(app, "/trace/t10k")  # warm: the trace template compiled
            builds, reads, reports = [], [], []
            for _ in range(args.rounds):  # interleaved, so a busy moment hits all three
                t_read, _ = timed(functools.partial(store.read, trace_id="t10k"))
                reads.append(t_read)
                t, (code, page) = timed(request, app, "/trace/t10k")
                assert code == 200
                builds.append(t)
                reports.append(timed(report_html, store, "t10k")[0])
            b, rd, rp = (statistics.median(x) for x in (builds, reads, reports))
            print(f"  trace page of {args.frames} frames: {len(page) / 1024:.0f} KB HTML, "
                  f"built in {b * 1000:.0f} ms; reading its events {rd * 1000:.0f} ms; "
                  f"ratio {b / rd:.2f}x (the page includes the read)")
            print(f"  report --html of it (read, build, render; in-process): "
                  f"{rp * 1000:.0f} ms; ratio {rp / rd:.2f}x")
            store.close()


if __name__ == "__main__":
    main()
