"""Kill -9 a live recorder at random moments; the store must stay sound.

    python bench/kill_recorder.py [KILLS] [--db URL] [--seed N] [--writer process]
                                                                      (default 100 kills)

Each round starts a writer process that records live attempts of a real capture, fed in
small chunks (one transaction per call), and SIGKILLs it after a random delay.  After every
kill: ``verify`` passes; the attempt that was in flight is ``pending`` (never a made-up
ending) and holds a well-formed prefix (frame indices 0..k-1, each exactly once); every
attempt the writer finished before is complete.  The same store accumulates every round,
so a later round also proves earlier damage did not spread.  Exit status 1 on any failure.

``--writer process``: the killed process is an application recording through a process
writer (``RecordingTransport(writer="process")``'s machinery: each chunk journaled, paced
as a live stream); after the kill its writer process records the journal to its end and
exits, and the same checks run on what it recorded.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CAPTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "real" / "openai-responses"
           / "text-gpt-4o.sse")

WRITER = r"""
import sys
from tracestore import Recorder
url, capture, prefix = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
rec = Recorder(url)
trace = rec.trace(prefix)
n = 0
while True:
    attempt = trace.attempt(f"{prefix}-{n}", api="openai-responses")
    print("attempt", n, flush=True)
    for start in range(0, len(capture), 200):
        attempt.feed(capture[start:start + 200])
    attempt.drain()
    n += 1
"""


#: An application recording through the process writer: it journals every 200-byte chunk
#: (1 ms apart, a live stream's pace) and never touches the store itself.
PROCESS_WRITER = r"""
import sys, time
from tracestore import Recorder
from tracestore.recording.body import BodyAttempt, BodyRecording
from tracestore.recording.process import ProcessWriter
url, capture, prefix = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
stop_mid = len(sys.argv) > 4  # stop half-way through the second attempt and say so
rec = Recorder(url)
owner = BodyRecording(rec.trace(prefix), ())
owner.process = ProcessWriter(owner)
n = 0
while True:
    attempt = owner.track(BodyAttempt(owner, "openai-responses", "sse", {}))
    attempt.handle.attempt_id, attempt.retry_of = f"{prefix}-{n}", None
    size = len(capture) // 2 if stop_mid and n == 1 else len(capture)
    for start in range(0, size, 200):
        attempt.received(capture[start:min(start + 200, size)])
        if n == 0 and start == 0:
            print("writer", owner.process.pid, flush=True)
        time.sleep(0.001)
    if size < len(capture):
        print("mid-stream", flush=True)
        time.sleep(60)
    attempt.ended()
    n += 1
"""


def wait_for_exit(pid: int, timeout: float = 120.0) -> bool:
    """Wait until process ``pid`` (not our child) is gone; False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.02)
    return False


def check_round(url: str, prefix: str) -> tuple[list[str], str]:
    """(problems, state of the attempt in flight)."""
    from tracestore.events import FrameReceived, TransportDrained
    from tracestore.projections import decide_release
    from tracestore.store.log import EventStore

    problems: list[str] = []
    with EventStore(url) as store:
        result = store.verify()
        if not result.ok:
            problems.append(f"verify: {result.reason} at {result.first_broken_position}")
        events = store.read(trace_id=prefix)
    attempts = sorted({e.attempt_id for e in events if e.attempt_id},
                      key=lambda a: int(a.rsplit("-", 1)[1]))
    state = "killed before its first attempt"
    for index, attempt in enumerate(attempts):
        frames = [e.event.index for e in events
                  if isinstance(e.event, FrameReceived) and e.event.attempt_id == attempt]
        if frames != list(range(len(frames))):
            problems.append(f"{attempt}: frames are not a prefix {frames[:5]}…")
        status = decide_release(events, attempt).status
        drained = any(isinstance(e.event, TransportDrained) and e.event.attempt_id == attempt
                      for e in events)
        if drained and status == "pending":
            problems.append(f"{attempt}: drained before the kill but pending")
        if index < len(attempts) - 1 and not drained:
            problems.append(f"{attempt}: the writer moved on without draining it")
        if index == len(attempts) - 1:
            if drained:  # killed between drain() and the next attempt: nothing in flight
                state = f"last attempt drained ({status}) before the kill"
            else:
                state = f"in-flight attempt {status} after {len(frames)} frames"
                if status != "pending":
                    problems.append(f"{attempt}: in flight at the kill but {status}")
    return problems, state


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kills", nargs="?", type=int, default=100)
    parser.add_argument("--db", default=None)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--max-delay", type=float, default=1.5)
    parser.add_argument("--writer", choices=("recorder", "process"), default="recorder",
                        help="kill a process recording with Recorder calls (default) or "
                             "one journaling to a process writer")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{tmp}/killed.db"
        from tracestore.store.log import EventStore

        EventStore(url).close()
        failures = pending = 0
        for round_ in range(args.kills):
            prefix = f"k{round_}"
            script = WRITER if args.writer == "recorder" else PROCESS_WRITER
            proc = subprocess.Popen([sys.executable, "-c", script, url, str(CAPTURE), prefix],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the writer is up and its first attempt is open
            time.sleep(rng.uniform(0.0, args.max_delay))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            if args.writer == "process" and not wait_for_exit(int(line.split()[1])):
                failures += 1
                print(f"round {round_}: the writer process did not finish the journal")
                continue
            problems, state = check_round(url, prefix)
            pending += "pending" in state
            if problems:
                failures += 1
                print(f"round {round_}: {'; '.join(problems)}")
        with EventStore(url) as store:
            result = store.verify()
        print(f"{args.kills} kill -9 at random moments (seed {args.seed}): {failures} rounds "
              f"with a problem; {pending} left their in-flight attempt pending; final verify "
              f"{'ok' if result.ok else 'FAILED'} over {result.count} events")
        return 0 if failures == 0 and result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
