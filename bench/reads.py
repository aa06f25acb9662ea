"""Whole-store reads (``attempts``, ``audit --json``, ``verify``) against raw baselines.

Prints, never asserts.  A store of N attempts (each the Bedrock projection
``fixtures/projections/t1.json`` under its own attempt and trace) is built once per size;
then, rounds interleaved, the work each command does after start-up (the library calls
its command makes, output to /dev/null) is timed against its raw ``sqlite3`` baseline in
the same process (start-up is measured by bench/startup.py):

* ``tracestore attempts --json``  vs one raw ``GROUP BY`` + join (``sqlite3``, payloads
  ``json.loads``-ed)                                     goal: ours <= 2x the baseline time;
* ``tracestore audit --json``     vs a raw per-trace load with ``json.loads``   goal <= 2x,
  and peak RSS constant in the store size (within 20% between the sizes);
* ``tracestore verify``           vs a raw loop with the same hash recipe  goal >= 0.8x speed;
  verify also re-hashes the stored captures the log references, which that loop does not
  read, so a second raw loop does the same work as well (each ``capture.stored`` payload
  ``json.loads``-ed for its sha256, each distinct blob read and re-hashed once);
* ``audit --json``'s loading alone (``iter_traces``, events parsed, no judging) against the
  same raw load, to show where the rest of its time goes.

Also, as subprocesses: the peak RSS of ``audit --json`` at each size, and the wall time of
``release ATTEMPT --json`` (a targeted read: must stay flat as the store grows).

Run:  python bench/reads.py [--attempts 1000,10000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
T1 = ROOT / "fixtures" / "projections" / "t1.json"
MiB = 1024 * 1024

RAW_ATTEMPTS = """
import json, sqlite3
conn = sqlite3.connect(sys.argv[1])
rows = conn.execute(
    "SELECT g.stream, g.n, g.first, e.payload FROM (SELECT stream, count(*) AS n, "
    "min(position) AS first FROM ts_events WHERE stream LIKE 'attempt:%' GROUP BY stream) g "
    "JOIN ts_events e ON e.position = g.first ORDER BY g.first").fetchall()
out = [{"attempt_id": s[8:], "events": n, "first_position": f,
        "trace_id": json.loads(p).get("trace_id"), "api": json.loads(p).get("api")}
       for s, n, f, p in rows]
sys.stdout.write(json.dumps({"attempts": out}) + "\\n")
"""

RAW_AUDIT = """
import json, sqlite3
conn = sqlite3.connect(sys.argv[1])
traces = [t for (t,) in conn.execute(
    "SELECT trace_id FROM ts_events WHERE trace_id IS NOT NULL GROUP BY trace_id "
    "ORDER BY min(position)")]
n = 0
for trace in traces:
    rows = conn.execute("SELECT * FROM ts_events WHERE trace_id = ? ORDER BY position",
                        (trace,)).fetchall()
    n += len([json.loads(r[8]) for r in rows])
sys.stdout.write(json.dumps({"events": n}) + "\\n")
"""

RAW_VERIFY = """
import hashlib, sqlite3
conn = sqlite3.connect(sys.argv[1])
prev, count = "0" * 64, 0
for (position, eid, stream, version, type_, schema, at, trace, payload, digest) in conn.execute(
        "SELECT * FROM ts_events ORDER BY position"):
    h = hashlib.sha256(f"{prev}\\x1f{position}\\x1f{eid}\\x1f{stream}\\x1f{version}\\x1f{type_}"
                       f"\\x1f{schema}\\x1f{at}\\x1f{trace or ''}\\x1f".encode())
    h.update(payload.encode())
    if h.hexdigest() != digest:
        raise SystemExit(f"broken at {position}")
    prev, count = digest, count + 1
sys.stdout.write(f"ok {count}\\n")
"""

# The same loop doing verify's capture work too: each capture event's payload parsed for
# the sha256 it names, each distinct blob read and re-hashed once.
RAW_VERIFY_CAPTURES = """
import hashlib, json, sqlite3
conn = sqlite3.connect(sys.argv[1])
prev, count, seen = "0" * 64, 0, set()
for (position, eid, stream, version, type_, schema, at, trace, payload, digest) in conn.execute(
        "SELECT * FROM ts_events ORDER BY position"):
    h = hashlib.sha256(f"{prev}\\x1f{position}\\x1f{eid}\\x1f{stream}\\x1f{version}\\x1f{type_}"
                       f"\\x1f{schema}\\x1f{at}\\x1f{trace or ''}\\x1f".encode())
    h.update(payload.encode())
    if h.hexdigest() != digest:
        raise SystemExit(f"broken at {position}")
    if type_ in ("capture.stored", "capture.segment"):
        sha = json.loads(payload)["sha256"]
        if sha not in seen:
            (data,) = conn.execute("SELECT data FROM ts_blobs WHERE sha256 = ?", (sha,)).fetchone()
            if hashlib.sha256(data).hexdigest() != sha:
                raise SystemExit(f"capture {sha} changed")
            seen.add(sha)
    prev, count = digest, count + 1
sys.stdout.write(f"ok {count}\\n")
"""


def build_store(path: Path, attempts: int) -> int:
    """N attempts of t1.json in one append (one transaction)."""
    from tracestore.store.bulk import paused_gc
    from tracestore.ingest import plan_ingest
    from tracestore.store.log import EventStore

    data = T1.read_bytes()
    with EventStore(f"sqlite:///{path}") as store, paused_gc():
        def events():
            for n in range(attempts):
                plan = plan_ingest(data, filename="t1.json", attempt_id=f"a{n}",
                                   trace_id=f"t{n}")
                yield from plan.events
        store.append(events(), blob_data=[data])
        total = store.head_position()
    conn = sqlite3.connect(path)  # fold the WAL into the file, as a settled store would be
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return total


def run(argv: list[str]) -> tuple[float, int]:
    """Wall time and peak RSS of one subprocess."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {argv}: {child.stderr.read().decode()[-1000:]}")
        return wall, usage.ru_maxrss * 1024


# The peak RSS a child reports includes what it inherited at fork from a large parent (this
# bench holds a whole store's worth of objects), so the command runs under a tiny wrapper
# process and the wrapper reports its own child's peak.
RSS_PROBE = ("import os, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
             "_, status, usage = os.wait4(p.pid, 0)\n"
             "print(usage.ru_maxrss * 1024 if os.waitstatus_to_exitcode(status) == 0 else -1)")


def peak_rss(argv: list[str]) -> int:
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, *argv], capture_output=True,
                         text=True, timeout=3600, check=True).stdout
    if int(out) < 0:
        raise SystemExit(f"failed: {argv}")
    return int(out)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def in_process(db: Path) -> dict[str, tuple]:
    """(ours, raw) callables per command: the work after start-up, in this process."""
    from tracestore.cli.common import emit_json
    from tracestore.cli.release_cmds import write_audit_json
    from tracestore.store.log import EventStore

    url = f"sqlite:///{db}"
    sink = open(os.devnull, "w")

    def ours_attempts() -> None:
        with EventStore(url, migrate_schema=False) as store:
            sink.write(json.dumps({"attempts": store.attempt_summaries()}))

    def ours_audit() -> None:
        with EventStore(url, migrate_schema=False) as store:
            write_audit_json(store, sink.write)

    def ours_verify() -> None:
        with EventStore(url, migrate_schema=False) as store:
            assert store.verify().ok

    def raw(script: str):
        code = compile(script, "raw", "exec")
        return lambda: exec(code, {"__name__": "raw", "sys": _Argv(str(db), sink)})

    def ours_audit_load() -> None:
        with EventStore(url, migrate_schema=False) as store:
            for _ in store.iter_traces():
                pass

    del emit_json
    return {"attempts --json": (ours_attempts, raw(RAW_ATTEMPTS)),
            "audit --json": (ours_audit, raw(RAW_AUDIT)),
            "  its loading": (ours_audit_load, raw(RAW_AUDIT)),
            "verify": (ours_verify, raw(RAW_VERIFY)),
            "  vs same work": (ours_verify, raw(RAW_VERIFY_CAPTURES))}


class _Argv:
    """Stands in for ``sys`` inside the raw scripts: argv names the store, stdout is null."""

    def __init__(self, db: str, sink) -> None:
        self.argv, self.stdout = ["raw", db], sink


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ts = str(Path(sys.executable).parent / "tracestore")
    peaks: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for attempts in (int(a) for a in args.attempts.split(",")):
            db = Path(tmp) / f"store-{attempts}.db"
            total = build_store(db, attempts)
            pairs = in_process(db)
            best = {k: [1e9, 1e9] for k in pairs}
            for _ in range(args.rounds):
                for name, (ours, raw) in pairs.items():
                    best[name] = [min(best[name][0], timed(ours)),
                                  min(best[name][1], timed(raw))]
            audit_rss = max(peak_rss([ts, "audit", "--json", "--db", str(db)])
                            for _ in range(2))
            release = [run([ts, "release", "a0", "--json", "--db", str(db)])[0]
                       for _ in range(args.rounds)]
            print(f"\n{attempts:,} attempts, {total:,} events (in-process work, best of "
                  f"{args.rounds} interleaved rounds)")
            for name, (ours, raw) in best.items():
                print(f"  {name:<16} ours {ours:6.2f} s  raw {raw:6.2f} s  "
                      f"time ratio {ours / raw:5.2f}x  speed {raw / ours:5.2f}x")
            print(f"  audit --json peak RSS (subprocess) {audit_rss / MiB:.0f} MiB; "
                  f"release a0 --json (subprocess) {min(release):.2f} s")
            peaks[total] = audit_rss
    if len(peaks) > 1:
        sizes = sorted(peaks)
        print(f"\naudit --json peak RSS: {peaks[sizes[0]] / MiB:.0f} MiB at {sizes[0]:,} "
              f"events, {peaks[sizes[-1]] / MiB:.0f} MiB at {sizes[-1]:,} events "
              f"(ratio {peaks[sizes[-1]] / peaks[sizes[0]]:.2f}, goal <= 1.2)")


if __name__ == "__main__":
    main()
