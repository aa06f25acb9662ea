"""Kill -9 ``tracestore ingest`` at random moments; after a re-run every
attempt has its decision, none is partial, ``verify`` passes.

    python bench/kill_ingest.py [KILLS] [--frames 20000] [--seed N] [--max-delay S]
        [--input projection|chat|bedrock]

Each round ingests a fresh projection, or a real capture repeated (``bench/ingest.py``'s
inputs: the streamed capture path), as its own attempt into one accumulating SQLite store
and SIGKILLs the process after a random delay; then the same ingest is run again to the
end.  After every round: ``verify`` passes, and every attempt in the store holds its
frames exactly once and one ``release.decided``.  Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from ingest import INPUTS  # noqa: E402


def problems(db: Path, frames: int) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT stream, sum(type = 'frame.received'), sum(type = 'release.decided') "
            "FROM ts_events WHERE stream LIKE 'attempt:%' GROUP BY stream").fetchall()
    finally:
        conn.close()
    return [f"{stream}: {n} frames, {d} decisions" for stream, n, d in rows
            if (n, d) != (frames, 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kills", nargs="?", type=int, default=100)
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--max-delay", type=float, default=4.0)
    parser.add_argument("--input", choices=sorted(INPUTS), default="projection")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="ts-kill-ingest-"))
    db = folder / "k.db"
    make, suffix = INPUTS[args.input]
    data = make(args.frames)
    exe = str(Path(sys.executable).parent / "tracestore")
    killed = finished_first = 0
    failures: list[str] = []
    for n in range(args.kills):
        path = folder / f"in{n}.{suffix}"
        path.write_bytes(data)
        argv = [exe, "ingest", str(path), "--attempt", f"a{n}", "--trace", f"t{n}",
                "--json", "--db", str(db)]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, args.max_delay))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        else:
            finished_first += 1
        proc.wait()
        rerun = subprocess.run(argv, capture_output=True, text=True)
        if rerun.returncode != 0:
            failures.append(f"round {n}: re-run exit {rerun.returncode}: {rerun.stderr[-300:]}")
            continue
        verify = subprocess.run([exe, "verify", "--json", "--db", str(db)],
                                capture_output=True, text=True)
        if verify.returncode != 0 or not json.loads(verify.stdout).get("ok"):
            failures.append(f"round {n}: verify failed: {verify.stdout[-300:]}")
        failures += [f"round {n}: {p}" for p in problems(db, args.frames)]
    print(f"{args.kills} rounds: {killed} killed mid-ingest, {finished_first} finished first; "
          f"after each re-run: {len(failures)} problems (attempts without their decision, "
          f"partial attempts, verify failures)")
    for failure in failures[:20]:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
