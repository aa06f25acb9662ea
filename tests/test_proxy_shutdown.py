"""A polite stop loses nothing: ``tracestore proxy`` given SIGTERM (as systemd, Docker and
Kubernetes stop services) or SIGINT lets in-flight streams finish within ``--grace``, cuts
the rest with a reset drain and a decision, flushes its recording and exits 0."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from clihelp import run
from proxy_upstream import Upstream, route_for
from proxyhelp import RESPONSES

from tracestore.projections import decide_release
from tracestore.store.log import EventStore

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(upstream: Upstream, db: Path, grace: float) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {**os.environ, "TRACESTORE_DB": ""}
    proxy = subprocess.Popen(
        [sys.executable, "-m", "tracestore", "proxy", "--upstream", upstream.url, "--listen",
         f"127.0.0.1:{port}", "--db", str(db), "--grace", str(grace),
         "--task", str(REPO / "fixtures" / "tasks" / "paris.json")],
        cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    assert proxy.stderr is not None
    assert "listening on" in proxy.stderr.readline()
    return proxy, f"http://127.0.0.1:{port}"


def _stream(base: str, received: list[bytes], first: threading.Event) -> None:
    body = {"model": "gpt-4o", "stream": True, "input": "Capital of France?"}
    try:
        with httpx.stream("POST", f"{base}/v1/responses", json=body, timeout=60) as response:
            for chunk in response.iter_raw():
                received.append(chunk)
                first.set()
    except httpx.HTTPError:
        received.append(b"<cut>")
    finally:
        first.set()


def _recorded(db: Path) -> dict[str, object]:
    with EventStore(f"sqlite:///{db}") as store:
        events = store.read()
        attempts = [e.event.attempt_id for e in events if e.type == "attempt.started"]
        assert len(attempts) == 1
        trace = next(e.trace_id for e in events if e.type == "attempt.started")
        decision = decide_release(store.read(trace_id=trace), attempts[0])
        return {"drains": [(e.event.outcome, e.event.detail) for e in events
                           if e.type == "transport.drained"],
                "decided": [e.event.status for e in events if e.type == "release.decided"],
                "status": decision.status, "verify": store.verify().ok}


# SIGTERM (how service managers stop the proxy) in the default run; SIGINT, handled by the
# same path, runs with -m slow (each case streams ~85 paced chunks).
@pytest.mark.parametrize("sig", [signal.SIGTERM,
                                 pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_a_stream_in_flight_finishes_and_is_recorded_whole(tmp_path: Path, sig: int) -> None:
    db = tmp_path / "proxy.db"
    with Upstream() as upstream:
        # ~85 chunks 10 ms apart: the signal arrives while most of the body is still coming.
        upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64, pace=0.01)
        proxy, base = _start(upstream, db, grace=30)
        received: list[bytes] = []
        first = threading.Event()
        client = threading.Thread(target=_stream, args=(base, received, first))
        client.start()
        assert first.wait(30)
        proxy.send_signal(sig)
        client.join(60)
        assert proxy.wait(60) == 0
        assert proxy.stderr is not None
        assert "stopped; every stream it forwarded is recorded" in proxy.stderr.read()
    assert b"".join(received) == RESPONSES.read_bytes()
    recorded = _recorded(db)
    assert recorded["drains"] == [("clean", None)]
    assert recorded["decided"] == ["released"] and recorded["status"] == "released"
    assert recorded["verify"] is True


def test_a_stream_past_the_grace_is_cut_with_a_reset_drain_and_a_decision(
        tmp_path: Path) -> None:
    db = tmp_path / "proxy.db"
    with Upstream() as upstream:
        # The upstream holds the body at byte 700 until released: it outlives the grace.
        route = route_for(RESPONSES, chunk=64, hold_at=700)
        upstream.routes["/v1/responses"] = route
        proxy, base = _start(upstream, db, grace=0.5)
        received: list[bytes] = []
        first = threading.Event()
        client = threading.Thread(target=_stream, args=(base, received, first))
        client.start()
        assert route.reached.wait(30)
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(60) == 0
        route.release.set()
        client.join(60)
    assert len(b"".join(c for c in received if c != b"<cut>")) == 700
    recorded = _recorded(db)
    assert recorded["drains"] == [
        ("reset", "ProxyShutDown: the proxy shut down before the upstream body ended")]
    assert recorded["decided"] == ["interrupted"] and recorded["status"] == "interrupted"
    assert recorded["verify"] is True


def test_a_grace_outside_its_range_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "tracestore", "proxy", "--upstream",
                           "http://127.0.0.1:9", "--grace", "-1", "--db",
                           str(tmp_path / "x.db"), "--listen", "127.0.0.1:0"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error[invalid_option]: --grace -1.0 is not a number")
    assert not (tmp_path / "x.db").exists()


def test_the_desk_exits_0_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    env = {**os.environ, "TRACESTORE_DB": ""}
    # the store is written in-process; the desk under test is the real process below
    assert run("replay", str(REPO / "fixtures" / "seed003" / "t7.json"), db=db)[0] == 0
    desk = subprocess.Popen([sys.executable, "-m", "tracestore", "serve", "--port", "0",
                             "--db", str(db)], env=env, stderr=subprocess.PIPE, text=True)
    assert desk.stderr is not None
    line = desk.stderr.readline()
    assert "the desk is at http://127.0.0.1:" in line
    url = line.split("the desk is at ", 1)[1].split(" ", 1)[0]
    assert httpx.get(url, timeout=30).status_code == 200
    desk.send_signal(signal.SIGTERM)
    assert desk.wait(60) == 0
