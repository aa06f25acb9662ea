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
* ``tracestore export``         vs a raw loop dumping every row as a JSON line and the
  blobs as base64                                          goal: ours <= 1.5x the baseline;
* ``audit --json`` judging live (no audit index: another tracestore wrote it, or no
  queue command ran since the appends) against the same load;
* ``audit --json`` right after fresh ``ingest``s (as many attempts again, each one
  ``ingest_input`` transaction) into a store whose index was current, the ingest keeping
  the index and, as a control, with that step switched off (the index left behind), against
  the same load of that store (goal <= 1.5x);
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
heads, count = {}, 0
for (position, eid, stream, version, type_, schema, at, trace, payload, digest,
     tv) in conn.execute("SELECT position, id, stream, version, type, schema_version, recorded_at, trace_id, "
        "payload, hash, trace_version FROM ts_events ORDER BY position"):
    have, prev = heads.get(trace, (0, "0" * 64))
    h = hashlib.sha256(f"{prev}\\x1f{position}\\x1f{tv}\\x1f{eid}\\x1f{stream}\\x1f{version}"
                       f"\\x1f{type_}\\x1f{schema}\\x1f{at}\\x1f{trace or ''}\\x1f".encode())
    h.update(payload.encode())
    if tv != have + 1 or h.hexdigest() != digest:
        raise SystemExit(f"broken at {position}")
    heads[trace], count = (tv, digest), count + 1
sys.stdout.write(f"ok {count}\\n")
"""

# ``export --format jsonl``'s raw loop: every row as stored, one JSON line each, then the
# capture blobs base64-encoded (the same fields, plain ``json.dumps``).
RAW_EXPORT = """
import base64, json, sqlite3
conn = sqlite3.connect(sys.argv[1])
write = sys.stdout.write
write(json.dumps({"format": "tracestore-jsonl", "version": 1}) + "\\n")
shas = []
for (position, eid, stream, version, type_, schema, at, trace, payload, digest,
     tv) in conn.execute("SELECT position, id, stream, version, type, schema_version, recorded_at, trace_id, "
        "payload, hash, trace_version FROM ts_events ORDER BY position"):
    write(json.dumps({"event": {"position": position, "id": eid, "stream": stream,
                                "version": version, "type": type_, "schema_version": schema,
                                "recorded_at": at, "hash": digest, "payload": payload,
                                "trace_id": trace, "trace_version": tv}}, ensure_ascii=False,
                     separators=(",", ":")) + "\\n")
    if type_ == "capture.stored":
        shas.append(json.loads(payload)["sha256"])
for sha in dict.fromkeys(shas):
    (data,) = conn.execute("SELECT data FROM ts_blobs WHERE sha256 = ?", (sha,)).fetchone()
    write(json.dumps({"blob": {"sha256": sha, "size": len(data),
                               "base64": base64.b64encode(data).decode()}}) + "\\n")
"""

# The same loop doing verify's capture work too: each capture event's payload parsed for
# the sha256 it names, each distinct blob read and re-hashed once.  Both verify loops follow
# each trace's chain (``chain.trace_chain_hash``), as ``verify`` does on a store made anew.
RAW_VERIFY_CAPTURES = """
import hashlib, json, sqlite3
conn = sqlite3.connect(sys.argv[1])
heads, count, seen = {}, 0, set()
for (position, eid, stream, version, type_, schema, at, trace, payload, digest,
     tv) in conn.execute("SELECT position, id, stream, version, type, schema_version, recorded_at, trace_id, "
        "payload, hash, trace_version FROM ts_events ORDER BY position"):
    have, prev = heads.get(trace, (0, "0" * 64))
    h = hashlib.sha256(f"{prev}\\x1f{position}\\x1f{tv}\\x1f{eid}\\x1f{stream}\\x1f{version}"
                       f"\\x1f{type_}\\x1f{schema}\\x1f{at}\\x1f{trace or ''}\\x1f".encode())
    h.update(payload.encode())
    if tv != have + 1 or h.hexdigest() != digest:
        raise SystemExit(f"broken at {position}")
    if type_ in ("capture.stored", "capture.segment"):
        sha = json.loads(payload)["sha256"]
        if sha not in seen:
            (data,) = conn.execute("SELECT data FROM ts_blobs WHERE sha256 = ?", (sha,)).fetchone()
            if hashlib.sha256(data).hexdigest() != sha:
                raise SystemExit(f"capture {sha} changed")
            seen.add(sha)
    heads[trace], count = (tv, digest), count + 1
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
        from tracestore.review import queue_index

        start = time.perf_counter()
        queue_index.sync(store)  # what any attempts/reviews command does after appends
        print(f"  (queue + audit index first build: {time.perf_counter() - start:.1f} s)")
    conn = sqlite3.connect(path)  # fold the WAL into the file, as a settled store would be
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return total


def ingest_fresh(db: Path, fresh: int, keep_index: bool) -> float:
    """``fresh`` more attempts, each recorded as ``tracestore ingest FILE`` does
    (``ingest_input``: one transaction each) after the index was built; ``keep_index=False``
    runs them with the ingest's index step switched off (the ingest does not keep the
    audit index).
    Returns the CPU seconds per ingest."""
    from unittest import mock

    from tracestore.ingest.pipeline import IngestOptions, ingest_input
    from tracestore.review import audit_index
    from tracestore.store.log import EventStore

    data = T1.read_bytes()
    off = mock.patch.object(audit_index, "follow_append", lambda view, traces: 0)
    with EventStore(f"sqlite:///{db}") as store:
        if not keep_index:
            off.start()
        try:
            start = time.process_time()
            for n in range(fresh):
                ingest_input(store, data, IngestOptions(filename="t1.json",
                                                        attempt_id=f"fresh{n}",
                                                        trace_id=f"fresh-t{n}"))
            spent = time.process_time() - start
        finally:
            if not keep_index:
                off.stop()
    return spent / max(fresh, 1)


def after_ingest(db: Path, fresh: int, rounds: int) -> None:
    """``audit --json`` right after ``fresh`` ingests into a store whose index was current:
    with the ingest keeping the index (now) and without (before), each against the raw
    per-trace load of the same store."""
    import shutil

    rows = []
    for keep in (False, True):
        copy = db.with_name(f"{db.stem}-fresh-{int(keep)}.db")
        shutil.copy(db, copy)
        per_ingest = ingest_fresh(copy, fresh, keep)
        conn = sqlite3.connect(copy)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        pairs = in_process(copy)
        ours, raw = pairs["audit --json"]
        best = [1e9, 1e9]
        for _ in range(rounds):
            best = [min(best[0], timed(ours)), min(best[1], timed(raw))]
        rows.append((keep, per_ingest, *best))
        copy.unlink()
    print(f"  audit --json right after {fresh:,} fresh `ingest`s (index current before them):")
    for keep, per_ingest, ours, raw in rows:
        label = "ingest keeps the index" if keep else "index left stale (before)"
        print(f"    {label:<26} ours {ours:6.2f} s  raw {raw:6.2f} s  time ratio "
              f"{ours / raw:5.2f}x   (ingest {per_ingest * 1000:.2f} ms CPU each)")


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
        with EventStore(url, create=False, read_only=True) as store:
            write_audit_json(store, sink.write)

    def ours_audit_live() -> None:  # what it costs without the audit index
        from tracestore.cli.release_cmds import write_audit_json_live

        with EventStore(url, create=False, read_only=True) as store:
            write_audit_json_live(store, sink.write)

    def ours_verify() -> None:
        with EventStore(url, migrate_schema=False) as store:
            assert store.verify().ok

    def raw(script: str):
        code = compile(script, "raw", "exec")
        return lambda: exec(code, {"__name__": "raw", "sys": _Argv(str(db), sink)})

    def ours_export() -> None:
        import tracestore
        from tracestore.export.jsonl import export_lines

        with EventStore(url, create=False, read_only=True) as store:
            for line in export_lines(lambda: store.iter_rows(), trace_id=None, redact=False,
                                     get_blob=store.get_blob,
                                     tracestore_version=tracestore.__version__):
                sink.write(line)

    def ours_audit_load() -> None:
        with EventStore(url, migrate_schema=False) as store:
            for _ in store.iter_traces():
                pass

    del emit_json
    return {"attempts --json": (ours_attempts, raw(RAW_ATTEMPTS)),
            "audit --json": (ours_audit, raw(RAW_AUDIT)),
            "  live (no index)": (ours_audit_live, raw(RAW_AUDIT)),
            "  its loading": (ours_audit_load, raw(RAW_AUDIT)),
            "export jsonl": (ours_export, raw(RAW_EXPORT)),
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
    parser.add_argument("--fresh", default="same",
                        help="attempts ingested after the index is built ('same': as many "
                             "as the store holds; 0: skip)")
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
            fresh = attempts if args.fresh == "same" else int(args.fresh)
            if fresh:
                after_ingest(db, fresh, args.rounds)
    if len(peaks) > 1:
        sizes = sorted(peaks)
        print(f"\naudit --json peak RSS: {peaks[sizes[0]] / MiB:.0f} MiB at {sizes[0]:,} "
              f"events, {peaks[sizes[-1]] / MiB:.0f} MiB at {sizes[-1]:,} events "
              f"(ratio {peaks[sizes[-1]] / peaks[sizes[0]]:.2f}, goal <= 1.2)")


if __name__ == "__main__":
    main()
