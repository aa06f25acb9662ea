"""The long run of the pipeline property: mutated real captures through decode → plan →
serialize → append → verify → release → audit → review; every outcome is a stored,
verifying, projecting attempt or a TracestoreError with a code.

    python bench/fuzz_pipeline.py [CASES] [SEED]        (default 100000 cases, seed 14)

Uses every fixture under fixtures/real and fixtures/projections (the CI test,
tests/test_pipeline_fuzz.py, takes the small ones and 20,000 cases).  Prints the figures
docs/store.md's reliability table quotes; exits 1 if any case ended in another exception.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pipeline_fuzz import run_cases  # noqa: E402


def main() -> int:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 14
    started = time.perf_counter()
    tally = run_cases(cases, seed=seed, batch=500, project_every=1)
    elapsed = time.perf_counter() - started
    refused = sum(tally.refused.values())
    print(f"cases {tally.cases} (seed {seed}) in {elapsed:.0f} s: "
          f"{tally.planned} stored ({tally.stored_events} events, {tally.projected} read back "
          f"through release/audit/review), {refused} refused with a code")
    print(f"internal errors: {tally.internal_errors} "
          f"({100 * tally.internal_errors / max(tally.cases, 1):.3f}%): "
          f"{len(tally.crashes)} crashes, {len(tally.unstorable)} decoded-but-unstorable, "
          f"{len(tally.verify_failures)} verify failures")
    print("refusals by code:", ", ".join(f"{code} {n}" for code, n in tally.refused.most_common()))
    for crash in tally.crashes[:20]:
        print("  crash:", crash)
    for case in tally.unstorable[:20]:
        print("  unstorable:", case)
    return 1 if tally.internal_errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
