"""Real applications through `tracestore proxy`: Node's `openai` package (a non-Python
client, as a Next.js route handler would use it) and the Python `openai` client, against a
fake upstream on 127.0.0.1 serving a real capture.  Both must give the same results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tracestore.events import ReleaseDecided
from tracestore.projections.destinations import audit

from proxy_upstream import route_for
from proxyhelp import RESPONSES, decide_release, drains, frames_of, ingested, running, \
    wait_for_drain

NODE_DIR = Path(__file__).parent / "node"
ANSWER = "The capital of France is Paris."


def node_ready() -> str | None:
    """Why the Node client cannot run here (None when it can)."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (NODE_DIR / "node_modules" / "openai").is_dir():
        return "tests/node has no node_modules (run: npm ci --prefix tests/node)"
    return None


def run_node(mode: str, proxy: str) -> dict:
    done = subprocess.run(["node", str(NODE_DIR / "client.mjs"), mode, proxy],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_python(mode: str, proxy: str) -> dict:
    import openai

    clients: list = []

    def client(path: str):
        clients.append(openai.OpenAI(api_key="sk-python-SECRET", base_url=f"{proxy}{path}",
                                     max_retries=0))
        return clients[-1]

    def open_(path: str, headers: dict | None = None):
        raw = client(path).responses.with_raw_response.create(
            model="gpt-4o", input="Capital of France?", stream=True,
            extra_headers=headers or {})
        return raw.parse(), raw.headers.get("x-tracestore-attempt")

    def deltas(stream):
        return (e.delta for e in stream if e.type == "response.output_text.delta")

    try:
        return _python_app(mode, proxy, open_, deltas)
    finally:
        for opened in clients:
            opened.close()


def _python_app(mode: str, proxy: str, open_, deltas) -> dict:
    out: dict = {}
    if mode == "full":
        stream, out["attempt"] = open_("/v1")
        out["text"] = "".join(deltas(stream))
    elif mode == "abort":
        stream, out["attempt"] = open_("/v1")
        out["text"] = next(deltas(stream))
        stream.close()  # the user's Stop: the request is aborted
    elif mode == "retry":
        old, out["old"] = open_("/old/v1", {"X-Tracestore-Trace": "t8",
                                            "X-Tracestore-Attempt": "old"})
        old_deltas = deltas(old)
        old_text = next(old_deltas)
        retry, out["attempt"] = open_("/v1", {"X-Tracestore-Trace": "t8",
                                              "X-Tracestore-Retry-Of": "old"})
        out["text"] = "".join(deltas(retry))
        out["oldText"] = old_text + "".join(old_deltas)
        import httpx

        out["posted"] = httpx.post(f"{proxy}/.tracestore/destinations", json={
            "attempt": out["attempt"], "destination": "ui", "text": out["text"]}).status_code
    return out


def client_run(which: str):
    if which == "python":
        return run_python
    reason = node_ready()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Node client test must run in CI: {reason}")
        pytest.skip(reason)
    return run_node


CLIENTS = ["node", "python"]


@pytest.mark.parametrize("which", CLIENTS)
def test_a_full_read_is_released_with_the_frames_of_ingest(tmp_path, which) -> None:
    run = client_run(which)
    with running(tmp_path) as setup:
        setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=57)
        out = run("full", setup.url)
        assert out["text"] == ANSWER
        events = wait_for_drain(setup, out["attempt"])
        frames, expected = ingested(RESPONSES)
        assert frames_of(events) == frames
        decision = setup.decision(out["attempt"])
        assert (decision.status, decision.reasons, decision.answer) == (
            expected.status, expected.reasons, ANSWER)
        assert drains(events) == [("clean", None)]
        request = events[0].event.request
        assert request["model"] == "gpt-4o" and "SECRET" not in json.dumps(request)
        agent = request["client"]
        assert agent.startswith("OpenAI/JS" if which == "node" else "OpenAI/Python")


@pytest.mark.parametrize("which", CLIENTS)
def test_an_abort_mid_stream_is_a_stop_at_the_byte_and_closes_the_upstream(
        tmp_path, which) -> None:
    run = client_run(which)
    with running(tmp_path) as setup:
        route = setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64,
                                                                    hold_at=2400)
        out = run("abort", setup.url)
        assert out["text"] == "The"  # the first delta, then the Stop
        assert route.closed.wait(10)  # the proxy closed its upstream request
        events = wait_for_drain(setup, out["attempt"])
        decision = setup.decision(out["attempt"])
        assert (decision.status, decision.reasons) == ("stopped",
                                                       ("local_stop_before_release",))
        segments = [e.event for e in events if e.type == "capture.segment"]
        # Every byte the proxy forwarded is recorded: all 2,400 the upstream sent before its
        # hold, unless the client's abort reached the proxy while the last chunks were still
        # arriving (then those were never forwarded, and the drain says how many were).
        forwarded = setup.recording.attempts[out["attempt"]].forwarded
        assert 0 < forwarded <= 2400
        assert segments[-1].offset + segments[-1].size == forwarded
        assert f"client disconnected after {forwarded} bytes" in drains(events)[0][1]
        assert [(e.event.by) for e in events if e.type == "local.stopped"] == ["client"]
        assert drains(events)[0][0] == "eof"
        assert "proxy closed the upstream request" in drains(events)[0][1]


@pytest.mark.parametrize("which", CLIENTS)
def test_a_retry_named_by_headers_is_a_two_attempt_trace_judged_like_t8(tmp_path,
                                                                       which) -> None:
    run = client_run(which)
    with running(tmp_path, routes=[("/old", "{upstream}/old")]) as setup:
        old_route = setup.upstream.routes["/old/v1/responses"] = route_for(
            RESPONSES, chunk=64, hold_at=2400)
        new_route = setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
        size = len(RESPONSES.read_bytes())

        def release_after_the_retry() -> None:  # the old body goes on once the retry ended
            while new_route.sent < size and not old_route.release.is_set():
                old_route.release.wait(0.01)
            old_route.release.set()

        watcher = threading.Thread(target=release_after_the_retry, daemon=True)
        watcher.start()
        out = run("retry", setup.url)
        watcher.join(10)
        assert (out["old"], out["text"], out["oldText"], out["posted"]) == (
            "old", ANSWER, ANSWER, 200)
        wait_for_drain(setup, "old")
        wait_for_drain(setup, out["attempt"])
        events = setup.rec.store.read(trace_id="t8")
        assert setup.events(out["attempt"])[0].event.retry_of == "old"
        old_d, new_d = decide_release(events, "old"), decide_release(events, out["attempt"])
        assert (old_d.status, old_d.reasons) == ("superseded",
                                                 ("superseded_by_newer_attempt",))
        assert (new_d.status, new_d.answer) == ("released", ANSWER)
        released = [e.event.attempt_id for e in events
                    if isinstance(e.event, ReleaseDecided) and e.event.eligible]
        assert released == [out["attempt"]]
        # The old attempt's late bytes come after the retry started (T8, as lived).
        started = next(e.position for e in events if e.type == "attempt.started"
                       and e.event.attempt_id == out["attempt"])
        old_segments = [e for e in events if e.type == "capture.segment"
                        and e.event.attempt_id == "old"]
        assert old_segments[0].position < started < old_segments[-1].position
        assert audit(events, trace_id="t8").violations == ()
