"""End-to-end ingest of a large projection: the shipped path against raw baselines.

Prints, never asserts.  Every figure is a ratio against a baseline measured in the same run,
rounds interleaved so load from other processes hits every contender alike.  Each contender
runs in its own fresh process (so its peak RSS is its own) on the same input file:

* ``cli``   -- ``tracestore ingest FILE --json`` as a subprocess (wall time incl. start-up);
* ``lib``   -- the library call the command makes (``plan_ingest`` + ``append_plan``);
* ``raw``   -- plain ``sqlite3``: ``json.loads`` the array, one payload per element with the
  same fields, the same SHA-256 chain recipe, ``executemany`` into a table with the same
  columns, constraints and indexes, the capture stored as a blob, one transaction, WAL,
  ``synchronous=FULL`` (our settings);
* ``es``    -- the ``eventsourcing`` library's SQLite application recorder inserting the same
  payloads (``json.loads`` + one ``StoredEvent`` per element, one ``insert_events`` call).

Goals: ours >= 0.8x raw and >= 0.6x
eventsourcing; the shipped command's peak RSS <= 3x the input size + 100 MiB at 100,000
and 1,000,000 elements.  Times are wall (best of the rounds) and CPU (user + system of the
contender's process, best of the rounds: steadier on a shared machine).  With ``--pg URL`` (or
``$TRACESTORE_TEST_PG_URL``) the library call also runs against PostgreSQL.

Also kept from the first version: loading one attempt (100 events) from a store of
1,000,000 events against a store of 1,000 (goal: at most 2x -- an index lookup, not a scan).

Before timing, the tracestore package is byte-compiled into its ``__pycache__`` folders (what
``pip install`` does for a regular install): with ``PYTHONDONTWRITEBYTECODE`` set and an
editable install, every contender importing tracestore would otherwise recompile its ~90
modules from source on each run (~0.07 s of CPU), which no installed copy pays.
``--no-compile`` keeps the old behaviour.

Run:  pip install -e '.[bench]' && python bench/ingest.py [--sizes 100000,1000000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

DELTA = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "
MiB = 1024 * 1024


def make_big_projection(frames: int) -> bytes:
    """A Bedrock projection of exactly ``frames`` native frames plus one drain label."""
    parts = ['{"messageStart":{"role":"assistant"}}']
    delta = json.dumps({"contentBlockDelta": {"contentBlockIndex": 0,
                                              "delta": {"text": DELTA}}},
                       separators=(",", ":"))
    parts += [delta] * (frames - 3)
    parts += ['{"contentBlockStop":{"contentBlockIndex":0}}',
              '{"messageStop":{"stopReason":"end_turn"}}',
              '{"local":"drain","outcome":"clean"}']
    return ("[\n" + ",\n".join(parts) + "\n]\n").encode()


REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
CHAT_CAPTURE = REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse"
BEDROCK_CAPTURE = REAL / "bedrock" / "nova-micro-text.bin"


def _messages(data: bytes) -> list[bytes]:
    """An AWS event stream's messages (each starts with its 4-byte total length).  The
    same walk as ``wire_eventstream.per_message``, kept here: importing that bench loads
    ``tracestore.wire`` into the raw and eventsourcing anchors' processes."""
    out, i = [], 0
    while i < len(data):
        size = int.from_bytes(data[i:i + 4], "big")
        out.append(data[i:i + size])
        i += size
    return out


def make_big_chat_capture(frames: int) -> bytes:
    """A real OpenAI Chat Completions capture (gpt-5, with usage and a moderation frame)
    with its first content delta repeated so the stream holds ``frames`` ``data:`` frames:
    every byte is the provider's own, in the order a longer answer would send them."""
    blocks = [b + b"\n\n" for b in CHAT_CAPTURE.read_bytes().split(b"\n\n") if b.strip()]
    head, delta, tail = blocks[:1], blocks[1], blocks[2:]
    return b"".join(head + [delta] * (frames - len(head) - len(tail)) + tail)


def make_big_bedrock_capture(frames: int) -> bytes:
    """A real Bedrock ConverseStream capture (Nova Micro) with its first
    ``contentBlockDelta`` message repeated (CRCs are per message, so each copy is valid) to
    ``frames`` messages."""
    messages = _messages(BEDROCK_CAPTURE.read_bytes())
    deltas = [i for i, m in enumerate(messages) if b"contentBlockDelta" in m[:80]]
    head, tail = messages[:deltas[0]], messages[deltas[-1] + 1:]
    body = [messages[deltas[0]]] * (frames - len(head) - len(tail))
    return b"".join(head + body + tail)


INPUTS = {"projection": (make_big_projection, "json"), "chat": (make_big_chat_capture, "sse"),
          "bedrock": (make_big_bedrock_capture, "bin")}


def _elements(path: Path, data: bytes) -> list[Any]:
    """The anchors' decode: the frames' JSON by ``json.loads`` and nothing else (no CRC
    check, no strictness, no normalizing): the cheapest honest reading of the input."""
    if path.suffix == ".json":
        return json.loads(data)
    if path.suffix == ".sse":
        return [json.loads(line[6:]) for line in data.split(b"\n")
                if line.startswith(b"data: ") and line != b"data: [DONE]"]
    out = []
    for message in _messages(data):
        headers = int.from_bytes(message[4:8], "big")
        out.append(json.loads(message[12 + headers:-4]))
    return out


# -- contenders (each runs in its own process: `bench/ingest.py --one NAME FILE DB`) -----

def run_lib(path: Path, db: str) -> int:
    from tracestore.store.bulk import paused_gc
    from tracestore.ingest.pipeline import append_plan
    from tracestore.ingest import plan_ingest
    from tracestore.store.log import EventStore

    data = path.read_bytes()
    with paused_gc():
        plan = plan_ingest(data, filename=path.name)
    with EventStore(db) as store:
        return append_plan(store, plan).appended


RAW_DDL = (
    "CREATE TABLE ts_events (position INTEGER PRIMARY KEY, id VARCHAR(64) NOT NULL UNIQUE, "
    "stream VARCHAR(255) NOT NULL, version INTEGER NOT NULL, type VARCHAR(64) NOT NULL, "
    "schema_version INTEGER NOT NULL, recorded_at VARCHAR(40) NOT NULL, "
    "trace_id VARCHAR(255), payload TEXT NOT NULL, hash VARCHAR(64) NOT NULL, "
    "trace_version INTEGER NOT NULL, UNIQUE (stream, version))",
    "CREATE INDEX ix_ts_events_trace_position ON ts_events (trace_id, position)",
    "CREATE UNIQUE INDEX uq_ts_events_trace_version ON ts_events "
    "((coalesce(trace_id, '')), trace_version)",
    "CREATE TABLE ts_blobs (sha256 VARCHAR(64) PRIMARY KEY, size INTEGER NOT NULL, "
    "data BLOB NOT NULL)",
)


def _payload(attempt: str, sha: str, index: int, element: dict) -> dict:
    return {"type": "frame.received", "attempt_id": attempt, "api": "bedrock-converse-stream",
            "native": element, "kinds": ["text_delta"], "event_name": None,
            "reader": "ingest", "index": index, "capture_sha256": sha, "offset": 0,
            "length": 0, "observed_at": None}


def run_raw(path: Path, db: str) -> int:
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    elements = _elements(path, data)
    conn = sqlite3.connect(db.removeprefix("sqlite:///"), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    for ddl in RAW_DDL:
        conn.execute(ddl)
    recorded_at = "2026-12-01T00:00:00.000000+00:00"
    prev, rows = "0" * 64, []
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for n, element in enumerate(elements, start=1):
        payload = dumps(_payload("raw", sha, n, element))
        event_id = uuid.uuid4().hex
        envelope = (f"{prev}\x1f{n}\x1f{n}\x1f{event_id}\x1fattempt:raw\x1f{n}"
                    f"\x1fframe.received\x1f1\x1f{recorded_at}\x1fraw\x1f")
        digest = hashlib.sha256(envelope.encode())
        digest.update(payload.encode())
        prev = digest.hexdigest()
        rows.append((n, event_id, "attempt:raw", n, "frame.received", 1, recorded_at, "raw",
                     payload, prev, n))
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO ts_blobs VALUES (?,?,?)", (sha, len(data), data))
    conn.executemany("INSERT INTO ts_events VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    conn.execute("COMMIT")
    conn.close()
    return len(rows)


def run_es(path: Path, db: str) -> int:
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    recorder = SQLiteApplicationRecorder(SQLiteDatastore(db.removeprefix("sqlite:///")))
    recorder.create_table()
    originator = uuid.uuid4()
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    stored = [StoredEvent(originator, n, "tracestore.events:FrameReceived",
                          dumps(_payload("es", sha, n, element)).encode())
              for n, element in enumerate(_elements(path, data), start=1)]
    recorder.insert_events(stored)
    return len(stored)


CONTENDERS = {"lib": run_lib, "raw": run_raw, "es": run_es}


def one(name: str, path: Path, db: str) -> None:
    """Child process: run one contender, print seconds and peak RSS as JSON."""
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage0.ru_utime + usage0.ru_stime  # the interpreter's own start is not the work
    start = time.perf_counter()
    count = CONTENDERS[name](path, db)
    elapsed = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"seconds": elapsed, "rss": usage.ru_maxrss * 1024, "count": count,
                      "cpu": usage.ru_utime + usage.ru_stime - cpu0}))


def measure(name: str, path: Path, db: str) -> dict:
    """Run a contender in a fresh process; wall time and peak RSS of that process."""
    if name == "cli":
        argv = [str(Path(sys.executable).parent / "tracestore"), "ingest", str(path),
                "--db", db, "--json"]
    else:
        argv = [sys.executable, __file__, "--one", name, str(path), db]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"{name} failed: {err.read().decode()[-2000:]}")
        if name == "cli":  # start-up included: what a user waits for
            return {"seconds": wall, "rss": usage.ru_maxrss * 1024,
                    "cpu": usage.ru_utime + usage.ru_stime}
        return json.loads(out.read().splitlines()[-1])


def compare_size(folder: Path, frames: int, rounds: int, names: list[str],
                 kind: str = "projection") -> None:
    make, suffix = INPUTS[kind]
    path = folder / f"{kind}-{frames}.{suffix}"
    path.write_bytes(make(frames))
    size = path.stat().st_size
    results: dict[str, list[dict]] = {n: [] for n in names}
    for round_no in range(rounds):
        for name in names:
            db = f"sqlite:///{folder / f'{name}-{frames}-{round_no}.db'}"
            results[name].append(measure(name, path, db))
            Path(db.removeprefix("sqlite:///")).unlink(missing_ok=True)
    best = {n: min(r["seconds"] for r in rs) for n, rs in results.items()}
    cpu = {n: min(r["cpu"] for r in rs) for n, rs in results.items()}
    what = {"projection": "frames + 1 label (Bedrock projection)",
            "chat": f"frames, OpenAI Chat SSE capture ({CHAT_CAPTURE.name} repeated)",
            "bedrock": f"messages, Bedrock event stream ({BEDROCK_CAPTURE.name} repeated)"}
    print(f"\n{frames:,} {what[kind]} ({size / MiB:.0f} MiB input), "
          f"best of {rounds} interleaved rounds, events/s and ratio (higher is better):")
    for name in names:
        rss = max(r["rss"] for r in results[name]) / MiB
        print(f"  {name:<4} {frames / best[name]:>10,.0f} events/s  {best[name]:7.2f} s  "
              f"CPU {cpu[name]:6.2f} s  peak RSS {rss:6.0f} MiB")
    for ours in ("cli", "lib"):
        if ours not in best:
            continue
        for anchor, goal in (("raw", 0.8), ("es", 0.6)):
            if anchor in best:
                print(f"  {ours}/{anchor:<3} {best[anchor] / best[ours]:5.2f}x wall, "
                      f"{cpu[anchor] / cpu[ours]:5.2f}x CPU   (goal >= {goal}, issue 25)")
    if "cli" in results:
        rss = max(r["rss"] for r in results["cli"])
        print(f"  cli peak RSS {rss / MiB:.0f} MiB; budget 3x input + 100 MiB = "
              f"{(3 * size + 100 * MiB) / MiB:.0f} MiB")


def compare_postgres(folder: Path, url: str, frames: int) -> None:
    path = folder / f"projection-{frames}.json"
    if not path.exists():
        path.write_bytes(make_big_projection(frames))
    lib = measure("lib", path, url)
    print(f"\nPostgreSQL ({frames:,} frames, library call): {frames / lib['seconds']:,.0f} "
          f"events/s ({lib['seconds']:.2f} s), peak RSS {lib['rss'] / MiB:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="cli,lib,raw,es")
    parser.add_argument("--inputs", default="projection,chat,bedrock",
                        help="projection (decoded), chat (an OpenAI Chat SSE capture), "
                             "bedrock (a Bedrock event-stream capture); comma-separated")
    parser.add_argument("--pg", default=os.environ.get("TRACESTORE_TEST_PG_URL"))
    parser.add_argument("--one", nargs=3, metavar=("NAME", "FILE", "DB"))
    parser.add_argument("--no-compile", action="store_true",
                        help="do not byte-compile tracestore first")
    args = parser.parse_args()
    if args.one:
        name, file, db = args.one
        one(name, Path(file), db)
        return
    if not args.no_compile:
        import compileall

        import tracestore

        compileall.compile_dir(Path(tracestore.__file__).parent, quiet=1)
    names = args.only.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        for frames in (int(s) for s in args.sizes.split(",")):
            for kind in args.inputs.split(","):
                compare_size(Path(tmp), frames, args.rounds, names, kind)
            if args.pg:
                compare_postgres(Path(tmp), args.pg, frames)


if __name__ == "__main__":
    main()
