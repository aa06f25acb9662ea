"""The long run of the streamed capture path's differential test: mutated real captures
planned by the fast path (``ingest/capture_fast.py``) and by the reference path
(``chunk_size`` forces it) must end the same way -- the same events byte for byte, or the
same error.  The CI test (``tests/test_ingest_capture_fast.py``) runs 600 cases.

    python bench/fuzz_capture_paths.py [CASES] [SEED]     (default 20000 cases, seed 25)

Prints how many cases took the fast path and every disagreement; exits 1 on any.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pipeline_fuzz import mutate, seeds  # noqa: E402
from test_ingest_capture_fast import _outcome  # noqa: E402

from tracestore.errors import TracestoreError  # noqa: E402
from tracestore.ingest.capture_fast import FAST_FRAMINGS, check_capture  # noqa: E402
from tracestore.ingest.fast import HandOver  # noqa: E402
from tracestore.wire import DETECT_HEAD_BYTES, framing_for_path  # noqa: E402


def main() -> int:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    rng = random.Random(seed)
    corpus = [(name, data) for name, data in seeds()
              if framing_for_path(name, data[:DETECT_HEAD_BYTES]) in FAST_FRAMINGS]
    started, fast, disagree = time.perf_counter(), 0, []
    for case in range(cases):
        name, data = corpus[case % len(corpus)]
        mutated = mutate(rng, data)
        if not mutated.strip():
            continue
        if _outcome(mutated, name) != _outcome(mutated, name, chunk_size=len(mutated) + 1):
            disagree.append((case, name))
            print(f"  case {case} ({name}): the two paths disagree")
        try:
            check_capture(mutated, framing_for_path(name, mutated[:DETECT_HEAD_BYTES]), "auto")
            fast += 1
        except (HandOver, TracestoreError):
            pass
    print(f"cases {cases} (seed {seed}, {len(corpus)} captures) in "
          f"{time.perf_counter() - started:.0f} s: {fast} on the fast path, "
          f"{len(disagree)} disagreements")
    return 1 if disagree else 0


if __name__ == "__main__":
    raise SystemExit(main())
