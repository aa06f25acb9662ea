"""A Node application through ``tracestore proxy`` against ``tracestore mock``: the
``openai`` npm package (``tests/node/chat.mjs``) with its base URL at the proxy, the proxy's
upstream the mock playing the conformance pack's T7 (Stop: the app aborts with an
AbortController) and T8 (Stop, then a retry named by ``X-Tracestore-Retry-Of``) while the
old stream goes on.  Each trace is audited clean and holds what its case allows."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tracestore.mock import RunningMock
from tracestore.mock.conformance import case
from tracestore.store.log import EventStore

from test_proxy_clients import NODE_DIR, node_ready

ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."
FIRST = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def proxy(upstream: str, db: Path, task: Path) -> Iterator[str]:
    """``tracestore proxy --upstream UPSTREAM`` as a user starts it; stopped by SIGTERM, after
    which everything it forwarded is in the store."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tracestore", "proxy", "--upstream", upstream, "--listen",
         f"127.0.0.1:{port}", "--task", str(task), "--db", f"sqlite:///{db}", "--grace", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.communicate()[1]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the proxy did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "every stream it forwarded is recorded" in out + err


def run_node(mode: str, url: str) -> dict:
    done = subprocess.run(["node", str(NODE_DIR / "chat.mjs"), mode, url],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture
def node() -> None:
    reason = node_ready()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Node client test must run in CI: {reason}")
        pytest.skip(reason)


@pytest.mark.usefixtures("node")
@pytest.mark.parametrize("name, trace", [("t7-stop", "t7"), ("t8-stop-retry", "t8")])
def test_a_node_app_through_the_proxy_passes_the_case(name: str, trace: str,
                                                      tmp_path: Path) -> None:
    found = case(name)
    task = tmp_path / "task.json"
    task.write_text(json.dumps(found.task))
    db = tmp_path / "node.db"
    with RunningMock(found.scenario) as mock, proxy(mock.url, db, task) as url:
        out = run_node(found.user, url)
        deadline = time.monotonic() + 10  # the mock notices the proxy left at its next write
        while mock.log[0]["client_left_at"] is None:
            assert time.monotonic() < deadline, mock.log
            time.sleep(0.02)
    if name == "t7-stop":
        assert out["shown"] == FIRST
    else:
        assert (out["old"], out["oldText"], out["text"], out["finish"]) == (
            "old", FIRST, ANSWER, "stop")
        assert [e["completed"] for e in mock.log] == [True, True]  # the old one went on
    # The provider's side: the upstream request ended early, though the mock went on.
    assert 0 < mock.log[0]["client_left_at"] < len(found.scenario.parent.joinpath(
        "captures", "normal-usage.sse").read_bytes())
    with EventStore(f"sqlite:///{db}") as store:
        found.check(store, trace)
        stops = [e.event.by for e in store.read(trace_id=trace) if e.type == "local.stopped"]
        assert stops == ["client"]
        if name == "t8-stop-retry":
            (retry,) = [e.event for e in store.read(trace_id=trace)
                        if e.type == "attempt.started" and e.event.attempt_id == out["attempt"]]
            assert retry.retry_of == "old"
