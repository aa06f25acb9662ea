"""Start-up cost of the shipped ``tracestore`` command against bare-import baselines.

Prints, never asserts.  Each figure is ours divided by a baseline timed in the same run,
rounds interleaved (ours, baseline, ours, ...) so machine noise hits both alike; the ratio
of medians and of best runs is printed:

1. ``tracestore --help`` and ``tracestore --version`` against ``python -c "import typer"``
   (goal: at most 2x);
2. ``tracestore release ATTEMPT --json``, ``events --attempt ATTEMPT --json`` and
   ``review ATTEMPT --format json`` on a one-attempt store against
   ``python -c "import sqlalchemy, pydantic, typer"`` (goal: at most 1.3x);
3. for reference, the same baseline against a bare Typer app whose one command has
   ``release``'s four parameters and prints a line (``TYPER_FLOOR``): what Typer's own
   parsing and per-parameter pydantic coercion cost before tracestore does anything.

Both sides load compiled bytecode: pip wrote the libraries' ``.pyc`` files at install, and
the bench writes tracestore's before timing (``cache_bytecode``).  Without that, a shell
with ``PYTHONDONTWRITEBYTECODE`` set (the agents' shells on this machine have it) compiles
every tracestore module from source on every run, ~60 ms that no installed copy pays.

Run:  python bench/startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "fixtures" / "real" / "anthropic" / "text-basic.sse"


# A Typer app shaped like `tracestore release` (root callback, one command, the same
# parameter kinds) that does nothing: the share of the 1.3x that Typer takes by itself.
TYPER_FLOOR = """
import sys
from typing import Annotated, Optional
import sqlalchemy, pydantic, typer
app = typer.Typer()
@app.callback()
def root() -> None: pass
@app.command()
def release(attempt: Annotated[str, typer.Argument()],
            at: Annotated[Optional[int], typer.Option("--at", min=0)] = None,
            db: Annotated[Optional[str], typer.Option("--db")] = None,
            as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    sys.stdout.write("{}\\n")
app(["release", "a1", "--json", "--db", "x.db"])
"""


def tracestore_command() -> list[str]:
    """The installed console script next to this interpreter (what users run)."""
    script = Path(sys.executable).parent / "tracestore"
    found = str(script) if script.exists() else shutil.which("tracestore")
    if found is None:
        raise SystemExit("install tracestore first: pip install -e .")
    return [found]


def cache_bytecode() -> None:
    """Write the ``.pyc`` files of the tracestore package the command runs, as its first
    run would where bytecode may be written (and as a wheel install does)."""
    import compileall

    import tracestore

    compileall.compile_dir(str(Path(tracestore.__file__).parent), quiet=1)


def wall(argv: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, from the child's rusage) of one run: on a
    shared machine the CPU time is the steadier figure (waiting for a core is not in it)."""
    import os

    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {argv}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def compare(name: str, ours: list[str], base: list[str], rounds: int, goal: str) -> None:
    wall(ours), wall(base)  # warm the page cache and .pyc files
    mine, theirs = [], []
    for _ in range(rounds):
        mine.append(wall(ours))
        theirs.append(wall(base))
    m_wall, t_wall = ([w for w, _ in x] for x in (mine, theirs))
    m_cpu, t_cpu = ([c for _, c in x] for x in (mine, theirs))
    med = statistics.median(m_wall) / statistics.median(t_wall)
    best = min(m_wall) / min(t_wall)
    cpu = statistics.median(m_cpu) / statistics.median(t_cpu)
    print(f"{name:<38} {statistics.median(m_wall) * 1000:5.0f} ms  "
          f"baseline {statistics.median(t_wall) * 1000:5.0f} ms  "
          f"wall median {med:4.2f}x  best {best:4.2f}x  CPU median {cpu:4.2f}x  (goal {goal})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    ts = tracestore_command()
    cache_bytecode()
    py = [sys.executable, "-c"]
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "small.db")
        subprocess.run([*ts, "ingest", str(CAPTURE), "--attempt", "a1", "--db", db, "--json"],
                       stdout=subprocess.DEVNULL, check=True)
        compare("tracestore --help", [*ts, "--help"], [*py, "import typer"], args.rounds,
                "<= 2x")
        compare("tracestore --version", [*ts, "--version"], [*py, "import typer"],
                args.rounds, "<= 2x")
        base = [*py, "import sqlalchemy, pydantic, typer"]
        compare("tracestore release a1 --json", [*ts, "release", "a1", "--json", "--db", db],
                base, args.rounds, "<= 1.3x")
        compare("tracestore events --attempt a1 --json",
                [*ts, "events", "--attempt", "a1", "--json", "--db", db], base, args.rounds,
                "<= 1.3x")
        compare("tracestore review a1 --format json",
                [*ts, "review", "a1", "--format", "json", "--db", db], base, args.rounds,
                "<= 1.3x")
        compare("(reference) bare Typer app, same params", [*py, TYPER_FLOOR], base,
                args.rounds, "none")


if __name__ == "__main__":
    main()
