"""Building a store from many captures: ``ingest-batch DIR`` against ``ingest FILE`` per file.

Prints, never asserts.  The real captures under ``fixtures/real`` (SSE, NDJSON, AWS event
stream) are copied ``--copies`` times each (a trailing newline more per copy, so every copy
is a distinct capture and a distinct attempt) into one folder, then, in the same run:

* the per-file rate: ``tracestore ingest FILE`` as one process per file, on the first
  ``--sample`` files (what building a store meant before);
* the bulk rate: ``tracestore ingest-batch FOLDER`` over all files, one process;
* ``tracestore replay FILE`` as one process per scenario against ``tracestore replay
  FOLDER`` (one transaction, a savepoint per scenario), over the seed 003 scenarios copied
  ``--copies`` times with their trace and attempt ids renamed per copy; and, in this
  process (start-up left out), the same scenarios appended one transaction each
  (``append_scenario`` in a loop, what ``replay FOLDER`` did before) against one
  transaction with a savepoint each (``append_scenarios``).

Goal: bulk >= 10x the per-file rate, for both.

Run:  python bench/bulk.py [--copies 10] [--sample 20]
"""

from __future__ import annotations

import argparse
import json
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


_ID_KEYS = ("trace", "attempt", "retry_of", "attempt_id")


def _renamed(value: object, suffix: str) -> object:
    """A scenario with every trace and attempt id suffixed (a distinct copy of it)."""
    if isinstance(value, dict):
        return {k: (v + suffix if k in _ID_KEYS and isinstance(v, str) else _renamed(v, suffix))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, suffix) for v in value]
    return value


def make_scenarios(folder: Path, copies: int) -> list[Path]:
    made = []
    for n in range(copies):
        for source in sorted((ROOT / "fixtures" / "seed003").glob("*.json")):
            scenario = _renamed(json.loads(source.read_text(encoding="utf-8")), f"-c{n}")
            target = folder / f"{n:03d}-{source.name}"
            target.write_text(json.dumps(scenario), encoding="utf-8")
            made.append(target)
    return made


def in_process(files: list[Path], tmp: str) -> tuple[float, float]:
    """Seconds to append ``files`` one transaction each, and in one with savepoints."""
    from tracestore.cli.release_cmds import read_scenario
    from tracestore.ingest.pipeline import append_scenario, append_scenarios
    from tracestore.store.log import EventStore

    scenarios = [read_scenario(f) for f in files]
    with EventStore(f"sqlite:///{tmp}/each.db") as store:
        start = time.perf_counter()
        for scenario in scenarios:
            append_scenario(store, scenario)
        each = time.perf_counter() - start
    with EventStore(f"sqlite:///{tmp}/once.db") as store:
        start = time.perf_counter()
        append_scenarios(store, scenarios)
        once = time.perf_counter() - start
    return each, once


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
        replay_dir = Path(tmp) / "scenarios"
        replay_dir.mkdir()
        scenarios = make_scenarios(replay_dir, args.copies)
        one_each = sum(wall([ts, "replay", str(f), "--db", f"{tmp}/replay-one.db", "--json"])
                       for f in scenarios[:args.sample])
        replay = wall([ts, "replay", str(replay_dir), "--db", f"{tmp}/replay.db", "--json"])
        each, once = in_process(scenarios, tmp)
    per_rate, bulk_rate = len(sample) / per_file, len(files) / bulk
    print(f"ingest FILE, one process per file: {per_rate:7.1f} files/s ({len(sample)} files)")
    print(f"ingest-batch FOLDER, one process:  {bulk_rate:7.1f} files/s ({len(files)} files)")
    print(f"  ratio {bulk_rate / per_rate:.1f}x   (goal >= 10)")
    one_rate, folder_rate = min(args.sample, len(scenarios)) / one_each, len(scenarios) / replay
    print(f"replay FILE, one process per scenario: {one_rate:7.1f} scenarios/s "
          f"({min(args.sample, len(scenarios))} scenarios)")
    print(f"replay FOLDER, one process:            {folder_rate:7.1f} scenarios/s "
          f"({len(scenarios)} scenarios)")
    print(f"  ratio {folder_rate / one_rate:.1f}x   (goal >= 10)")
    n = len(scenarios)
    print(f"in one process, {n} scenarios: a transaction each {n / each:7.1f} scenarios/s, "
          f"one transaction with savepoints {n / once:7.1f} scenarios/s ({each / once:.1f}x)")


if __name__ == "__main__":
    main()
