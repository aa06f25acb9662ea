"""Building a store from many captures: ``ingest-batch DIR`` against ``ingest FILE`` per file.

Prints, never asserts.  The real captures under ``fixtures/real`` (SSE, NDJSON, AWS event
stream) are copied ``--copies`` times each (a trailing newline more per copy, so every copy
is a distinct capture and a distinct attempt) into one folder, then, in the same run:

* the per-file rate: ``tracestore ingest FILE`` as one process per file, on the first
  ``--sample`` files (what building a store meant before);
* the bulk rate: ``tracestore ingest-batch FOLDER`` over all files, one process;
* for reference, ``tracestore replay FOLDER`` of the seed 003 scenarios, scenarios per second.

Goal (issue 13): bulk >= 10x the per-file rate.

Run:  python bench/bulk.py [--copies 10] [--sample 20]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = ("*.sse", "*.ndjson")


def make_folder(folder: Path, copies: int) -> list[Path]:
    sources = [p for pattern in PATTERNS for p in sorted((ROOT / "fixtures" / "real").rglob(pattern))]
    made = []
    for n in range(copies):
        for source in sources:
            target = folder / f"{n:03d}-{source.parent.name}-{source.name}"
            target.write_bytes(source.read_bytes() + b"\n" * (n + 1))
            made.append(target)
    return made


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--sample", type=int, default=20)
    args = parser.parse_args()
    ts = str(Path(sys.executable).parent / "tracestore")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "captures"
        folder.mkdir()
        files = make_folder(folder, args.copies)
        sample = files[:args.sample]
        per_file = sum(wall([ts, "ingest", str(f), "--db", f"{tmp}/one.db", "--json"])
                       for f in sample)
        bulk = wall([ts, "ingest-batch", str(folder), "--db", f"{tmp}/bulk.db", "--json"])
        scenarios = ROOT / "fixtures" / "seed003"
        replay_dir = Path(tmp) / "scenarios"
        shutil.copytree(scenarios, replay_dir, ignore=shutil.ignore_patterns("*.md"))
        count = len(list(replay_dir.glob("*.json")))
        replay = wall([ts, "replay", str(replay_dir), "--db", f"{tmp}/replay.db", "--json"])
    per_rate, bulk_rate = len(sample) / per_file, len(files) / bulk
    print(f"ingest FILE, one process per file: {per_rate:7.1f} files/s ({len(sample)} files)")
    print(f"ingest-batch FOLDER, one process:  {bulk_rate:7.1f} files/s ({len(files)} files)")
    print(f"  ratio {bulk_rate / per_rate:.1f}x   (goal >= 10)")
    print(f"replay FOLDER ({count} seed 003 scenarios, one process): {count / replay:.1f} "
          "scenarios/s including start-up")


if __name__ == "__main__":
    main()
