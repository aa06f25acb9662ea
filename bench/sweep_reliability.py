"""The reliability sweep: every way a polite stop, a hostile input or an outage could lose
or leak something, tried, with one line per row saying whether it held.

    python bench/sweep_reliability.py [--rounds 50] [--lock-seconds 40] [--seed 38]

Campaigns run here (each round at a random moment):

* SIGTERM to ``tracestore proxy`` while a client streams through it: the client gets its
  bytes, the proxy exits 0, every attempt has a drain and a decision, ``verify`` passes;
* SIGTERM to a recording application (Recorder API, writer thread, writer process in turn)
  mid-stream: it exits 0, every attempt is decided, ``verify`` passes;
* an exclusive lock held on the proxy's store for ``--lock-seconds`` (past SQLite's 30 s
  busy timeout) while a client streams: the attempt is recorded whole once the lock goes.

The other rows (self-registered reviewers, secrets in request bodies, unbounded readers,
damaged rows, hostile imports, kill -9) are the tests that prove them, run here by name.
Exit status 1 when any row did not hold.  Rounds spawn processes, so the whole sweep takes a
few minutes; ``--rounds 10`` for a quick look.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
CAPTURE = REPO / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"
TASK = REPO / "fixtures" / "tasks" / "paris.json"

APP = r"""
import sys, time
from tracestore import Recorder
from tracestore.recording.body import BodyAttempt, BodyRecording
url, capture, writer, n = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3], sys.argv[4]
rec = Recorder(url)
trace = rec.trace(n, task={"answer_patterns": ["Paris"]})
owner = None
if writer != "api":
    owner = BodyRecording(trace, ())
    if writer == "process":
        from tracestore.recording.process import ProcessWriter
        owner.process = ProcessWriter(owner)
print("up", flush=True)
k = 0
while True:  # attempts fed at a live stream's pace until the signal comes
    if owner is None:
        attempt = trace.attempt(f"{n}-{k}", api="openai-responses")
        for start in range(0, len(capture), 200):
            attempt.feed(capture[start:start + 200]); time.sleep(0.002)
        attempt.drain()
    else:
        attempt = owner.track(BodyAttempt(owner, "openai-responses", "sse", {}))
        attempt.handle.attempt_id, attempt.retry_of = f"{n}-{k}", None
        for start in range(0, len(capture), 200):
            attempt.received(capture[start:start + 200]); time.sleep(0.002)
        attempt.ended()
    k += 1
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _undecided(url: str, trace: str | None = None) -> tuple[list[str], bool, int]:
    """(attempts without a drain or a decision, verify ok, attempts seen)."""
    from tracestore.projections import decide_release
    from tracestore.store.log import EventStore

    with EventStore(url) as store:
        ok = store.verify().ok
        events = store.read(trace_id=trace) if trace else store.read()
    attempts = sorted({e.attempt_id for e in events if e.type == "attempt.started"})
    bad = []
    for attempt in attempts:
        mine = [e for e in events if e.trace_id == next(
            x.trace_id for x in events if x.attempt_id == attempt)]
        drained = any(e.type == "transport.drained" and e.event.attempt_id == attempt
                      for e in events)
        if not drained or decide_release(mine, attempt).status == "pending":
            bad.append(attempt)
    return bad, ok, len(attempts)


def proxy_sigterm(rounds: int, rng: random.Random, tmp: Path) -> tuple[bool, str]:
    import httpx
    from proxy_upstream import Upstream, route_for

    problems, cut = [], 0
    for n in range(rounds):
        db = tmp / f"proxy-{n}.db"
        with Upstream() as upstream:
            upstream.routes["/v1/responses"] = route_for(CAPTURE, chunk=64, pace=0.01)
            port = _free_port()
            proxy = subprocess.Popen(
                [sys.executable, "-m", "tracestore", "proxy", "--upstream", upstream.url,
                 "--listen", f"127.0.0.1:{port}", "--db", str(db), "--task", str(TASK),
                 "--grace", str(rng.choice([0.2, 30]))],
                stderr=subprocess.PIPE, text=True, env={**os.environ, "TRACESTORE_DB": ""})
            assert proxy.stderr is not None
            proxy.stderr.readline()
            got: list[bytes] = []

            def client(got: list[bytes] = got, port: int = port) -> None:
                body = {"model": "gpt-4o", "stream": True, "input": "Capital of France?"}
                try:
                    with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/responses",
                                      json=body, timeout=60) as response:
                        got.extend(response.iter_raw())
                except httpx.HTTPError:
                    pass

            thread = threading.Thread(target=client)
            thread.start()
            time.sleep(rng.uniform(0.05, 1.2))
            proxy.send_signal(signal.SIGTERM)
            code = proxy.wait(60)
            thread.join(60)
        bad, ok, seen = _undecided(f"sqlite:///{db}")
        cut += len(b"".join(got)) < CAPTURE.stat().st_size
        if code != 0 or bad or not ok or seen != 1:
            problems.append(f"round {n}: exit {code}, undecided {bad}, verify {ok}, "
                            f"{seen} attempts")
    return not problems, (f"{rounds} rounds, {cut} cut by a short grace, every attempt "
                          f"decided" if not problems else "; ".join(problems[:3]))


def app_sigterm(rounds: int, rng: random.Random, tmp: Path) -> tuple[bool, str]:
    from tracestore.store.log import EventStore

    url = f"sqlite:///{tmp / 'apps.db'}"
    EventStore(url).close()
    problems, attempts = [], 0
    writers = ("api", "thread", "process")
    for n in range(rounds):
        writer = writers[n % 3]
        env = {k: v for k, v in os.environ.items() if k != "TRACESTORE_SIGTERM"}
        app = subprocess.Popen([sys.executable, "-c", APP, url, str(CAPTURE), writer,
                                f"r{n}"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=env)
        assert app.stdout is not None
        app.stdout.readline()
        time.sleep(rng.uniform(0.0, 1.0))
        app.send_signal(signal.SIGTERM)
        code = app.wait(60)
        deadline = time.monotonic() + 60  # a process writer's child finishes the journal
        while True:
            bad, ok, seen = _undecided(url, f"r{n}")
            if not bad or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        attempts += seen
        if code != 0 or bad or not ok:
            problems.append(f"round {n} ({writer}): exit {code}, undecided {bad}, "
                            f"verify {ok}")
    return not problems, (f"{rounds} rounds (api, thread, process in turn), {attempts} "
                          "attempts, every one decided" if not problems
                          else "; ".join(problems[:3]))


def lock_outage(seconds: float, tmp: Path) -> tuple[bool, str]:
    import httpx
    from proxy_upstream import Upstream, route_for

    db = tmp / "locked.db"
    from tracestore.store.log import EventStore

    EventStore(f"sqlite:///{db}").close()
    with Upstream() as upstream:
        upstream.routes["/v1/responses"] = route_for(CAPTURE, chunk=64, pace=0.01)
        port = _free_port()
        proxy = subprocess.Popen(
            [sys.executable, "-m", "tracestore", "proxy", "--upstream", upstream.url,
             "--listen", f"127.0.0.1:{port}", "--db", str(db), "--task", str(TASK)],
            stderr=subprocess.PIPE, text=True, env={**os.environ, "TRACESTORE_DB": ""})
        assert proxy.stderr is not None
        proxy.stderr.readline()
        lock = sqlite3.connect(db, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        body = {"model": "gpt-4o", "stream": True, "input": "Capital of France?"}
        with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/responses", json=body,
                          timeout=120) as response:
            got = b"".join(response.iter_raw())
        streamed = time.monotonic() - started
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))
        lock.execute("COMMIT")
        lock.close()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            bad, ok, seen = _undecided(f"sqlite:///{db}")
            if seen and not bad:
                break
            time.sleep(0.5)
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(60)
    whole = got == CAPTURE.read_bytes()
    held = whole and seen == 1 and not bad and ok
    return held, (f"a {seconds:.0f} s exclusive lock: the client streamed in {streamed:.1f} s, "
                  f"the attempt {'recorded whole and decided' if held else 'NOT recorded'} "
                  "once the lock went")


TEST_ROWS = [
    ("a self-registered second name cannot approve",
     ["tests/test_reviewer_trust.py"]),
    ("planted secrets (body, header, query) never reach the store or spill files",
     ["tests/test_secret_redaction.py"]),
    ("every file argument refuses /dev/zero with input_too_large",
     ["tests/test_file_bounds.py"]),
    ("the desk refuses a huge or endless POST before reading it",
     ["tests/test_serve_truth.py", "-k", "post"]),
    ("verify names damaged rows instead of crashing", ["tests/test_verify_damage.py"]),
    ("import refuses hostile exports, nothing written",
     ["tests/test_import_refusals.py", "tests/test_import_hostile.py"]),
    ("kill -9 mid-stream leaves a pending prefix that verifies",
     ["tests/test_recording_process.py", "-k", "killed"]),
]


def run_tests(args: list[str]) -> bool:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=REPO, capture_output=True, text=True)
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--lock-seconds", type=float, default=40.0)
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows: list[tuple[str, bool, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, check in (
                ("SIGTERM to the proxy mid-stream",
                 lambda: proxy_sigterm(args.rounds, rng, Path(tmp))),
                ("SIGTERM to a recording application mid-stream",
                 lambda: app_sigterm(args.rounds, rng, Path(tmp))),
                ("a database locked past its busy timeout",
                 lambda: lock_outage(args.lock_seconds, Path(tmp)))):
            held, detail = check()
            rows.append((name, held, detail))
            print(f"{'held' if held else 'FAILED':<6}  {name}: {detail}", flush=True)
    for name, test_args in TEST_ROWS:
        held = run_tests(test_args)
        rows.append((name, held, " ".join(test_args)))
        print(f"{'held' if held else 'FAILED':<6}  {name} ({' '.join(test_args)})", flush=True)
    failed = [r for r in rows if not r[1]]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} rows held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
