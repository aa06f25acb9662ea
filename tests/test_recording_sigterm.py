"""A recording application stopped with SIGTERM (as process managers stop services) exits 0
with every stream decided: finished ones recorded whole, the one in flight cut with a reset
drain (the application exited) and its decision; through the Recorder API, the writer
thread and the process writer alike."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tracestore.projections import decide_release
from tracestore.recording.shutdown import EXIT_DETAIL
from tracestore.store.log import EventStore

REPO = Path(__file__).resolve().parents[1]
# openai-responses/text-gpt-4o.sse: see fixtures/real/PROVENANCE.md
CAPTURE = REPO / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"

RECORDER_API = r"""
import sys, time
from tracestore import Recorder
url, capture = sys.argv[1], open(sys.argv[2], "rb").read()
rec = Recorder(url)
trace = rec.trace("t", task={"answer_patterns": ["Paris"]})
done = trace.attempt("a0", api="openai-responses")
done.feed(capture)
done.drain()
cut = trace.attempt("a1", api="openai-responses", retry_of="a0")
cut.feed(capture[:len(capture) // 2])
print("mid-stream", flush=True)
time.sleep(60)
"""

TRANSPORT = r"""
import sys, time
from tracestore import Recorder
from tracestore.recording.body import BodyAttempt, BodyRecording
url, capture, writer = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
rec = Recorder(url)
owner = BodyRecording(rec.trace("t", task={"answer_patterns": ["Paris"]}), ())
if writer == "process":
    from tracestore.recording.process import ProcessWriter
    owner.process = ProcessWriter(owner)
for n in range(2):
    attempt = owner.track(BodyAttempt(owner, "openai-responses", "sse", {}))
    attempt.handle.attempt_id, attempt.retry_of = f"a{n}", None
    size = len(capture) if n == 0 else len(capture) // 2
    for start in range(0, size, 200):
        attempt.received(capture[start:min(start + 200, size)])
    if n == 0:
        attempt.ended()
print("mid-stream", flush=True)
time.sleep(60)
"""


def _run_and_terminate(script: str, *args: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "TRACESTORE_SIGTERM"}
    proc = subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"mid-stream\n", proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=60)


def _outcomes(url: str) -> dict[str, tuple[list[tuple[str, str | None]], str]]:
    with EventStore(url) as store:
        assert store.verify().ok
        events = store.read(trace_id="t")
    out = {}
    for attempt in ("a0", "a1"):
        drains = [(e.event.outcome, e.event.detail) for e in events
                  if e.type == "transport.drained" and e.event.attempt_id == attempt]
        out[attempt] = (drains, decide_release(events, attempt).status)
    return out


@pytest.mark.parametrize("writer", ["recorder-api", "thread", "process"])
def test_sigterm_records_every_stream_and_exits_0(tmp_path: Path, writer: str) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    EventStore(url).close()
    if writer == "recorder-api":
        code = _run_and_terminate(RECORDER_API, url, str(CAPTURE))
    else:
        code = _run_and_terminate(TRANSPORT, url, str(CAPTURE), writer)
    assert code == 0
    if writer == "process":  # its child records the journal to its end, then exits
        import time

        for _ in range(600):
            if _outcomes(url)["a1"][0]:
                break
            time.sleep(0.05)
    outcomes = _outcomes(url)
    assert outcomes["a0"] == ([("clean", None)], "released")
    assert outcomes["a1"] == ([("reset", EXIT_DETAIL)], "interrupted")


def test_a_kept_default_leaves_sigterm_alone(tmp_path: Path) -> None:
    """``TRACESTORE_SIGTERM=default``: the application chose Python's default (killed at
    once, the stream in flight stays pending with a well-formed prefix)."""
    url = f"sqlite:///{tmp_path / 'app.db'}"
    EventStore(url).close()
    proc = subprocess.Popen([sys.executable, "-c", RECORDER_API, url, str(CAPTURE)], cwd=REPO,
                            env={**os.environ, "TRACESTORE_SIGTERM": "default"},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stdout.readline() == b"mid-stream\n"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM
    outcomes = _outcomes(url)
    assert outcomes["a0"] == ([("clean", None)], "released")
    assert outcomes["a1"] == ([], "pending")
