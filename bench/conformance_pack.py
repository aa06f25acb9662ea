"""The whole conformance pack against the example chat app, timed.

    python bench/conformance_pack.py [--rounds 3]

Runs ``examples/chat-app/tests/test_conformance.py`` (every case of seed 003's pack against
the app, and against its buggy copy) in a fresh pytest process, beside an anchor: the same
pytest process collecting the same file without running it (interpreter, imports and
collection).  Prints the best of ``--rounds`` for each and the pack's own time (the
difference).  Goal: the pack runs in under 60 s on the CI machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chat-app"


def timed(*args: str) -> float:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{EXAMPLE}"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_conformance.py", *args], cwd=EXAMPLE, env=env,
                          capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the pack failed:\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pack = anchor = float("inf")
    for _ in range(args.rounds):
        anchor = min(anchor, timed("--collect-only"))
        pack = min(pack, timed())
    print(f"conformance pack against examples/chat-app (best of {args.rounds}): "
          f"{pack:.1f} s; collection alone {anchor:.1f} s; the cases themselves "
          f"{pack - anchor:.1f} s (goal: the pack under 60 s)")


if __name__ == "__main__":
    main()
