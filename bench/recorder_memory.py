"""Recorder memory on a long stream: a 100 MB Anthropic stream fed to ``Recorder`` in
64 KiB chunks, against a 10 MB one in the same run (SQLite file).

    .venv/bin/python bench/recorder_memory.py [--mb 100] [--small-mb 10] [--chunk 65536]

For each size, prints the peak of Python-allocated memory (tracemalloc) while the stream
is fed, and while it is drained and judged, then the ratio of the long stream's feeding
peak to the short one's: bounded memory means a ratio near 1 however long the stream (the
pending frame plus one chunk).  Judging the final answer holds its text once (the
semantic rule needs it), so the drain peak grows with the answer: reported, not hidden.
Never asserts; tests/test_recording.py has the CI-sized check (16 MiB, < 4 MiB peak).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from long_stream import long_anthropic_stream  # noqa: E402


def record(db: str, total: int, chunk: int) -> tuple[int, list[int], float, str]:
    """(bytes fed, peaks, seconds, decision status) for one stream; the peaks are while
    feeding all but the last chunk, while feeding the last (its native terminal makes the
    decision final: judged), while draining, and while ``decision()`` recomputes it."""
    from tracestore import Recorder

    with Recorder(db) as rec:
        attempt = rec.trace(f"long-{total}").attempt(api="anthropic-messages")
        started = time.perf_counter()
        tracemalloc.start()
        fed, peaks, last = 0, [], b""
        for piece in long_anthropic_stream(total, chunk):
            if last:
                attempt.feed(last)
                fed += len(last)
            last = piece
        for step in (lambda: attempt.feed(last), attempt.drain, attempt.decision):
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.reset_peak()
            result = step()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        return fed + len(last), peaks, time.perf_counter() - started, result.status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--small-mb", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=64 * 1024)
    args = parser.parse_args()
    mib = 1024 * 1024
    peaks = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (args.small_mb, args.mb):
            fed, (feeding, last, drain, decision), seconds, status = record(
                f"sqlite:///{tmp}/mem-{size}.db", size * 1000 * 1000, args.chunk)
            peaks[size] = feeding
            print(f"{fed / mib:7.1f} MiB stream in {args.chunk} B chunks ({seconds:.1f} s, "
                  f"{status}): peak MiB while feeding {feeding / mib:.2f}, feeding the "
                  f"terminal {last / mib:.2f}, draining {drain / mib:.2f}, decision() "
                  f"{decision / mib:.2f}")
    print(f"ratio of feeding peaks {args.mb} MB / {args.small_mb} MB stream: "
          f"{peaks[args.mb] / peaks[args.small_mb]:.2f}x")


if __name__ == "__main__":
    main()
