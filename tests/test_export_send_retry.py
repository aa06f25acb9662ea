"""``export --format otlp --endpoint``: a busy or cold receiver gets the post again, with
exponential backoff, a bounded number of times; each retry is reported on stderr."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clihelp import run

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"


class Scripted:
    """An HTTP receiver on 127.0.0.1 answering each POST with the next scripted reply
    (status, headers, seconds to stall first); the last reply repeats."""

    def __init__(self, *replies: tuple[int, dict[str, str], float]) -> None:
        self.posts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                self.rfile.read(int(self.headers["Content-Length"]))
                status, headers, stall = replies[min(outer.posts, len(replies) - 1)]
                outer.posts += 1
                time.sleep(stall)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", "4")
                self.end_headers()
                try:
                    self.wfile.write(b"busy")
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        # polled every 20 ms (not 0.5 s), so that leaving it does not wait on the poll
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> Scripted:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("retry") / "t8.db"
    assert run("replay", str(SEED / "t8.json"), db=path)[0] == 0
    return path


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TRACESTORE_OTLP_RETRY_BASE", "0.01")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    yield


def test_two_503s_then_200_is_a_success_with_two_retry_lines(db: Path) -> None:
    with Scripted((503, {}, 0), (503, {}, 0), (200, {}, 0)) as receiver:
        code, _, err = run("export", "--format", "otlp", "--endpoint", receiver.url, db=db)
    assert code == 0, err
    assert receiver.posts == 3
    lines = [line for line in err.splitlines() if line.startswith("retry ")]
    assert lines == [
        f"retry 1/4: the OTLP endpoint {receiver.url} answered HTTP 503; trying again in "
        "0.01 s",
        f"retry 2/4: the OTLP endpoint {receiver.url} answered HTTP 503; trying again in "
        "0.02 s"]
    assert f"exported 3 spans to {receiver.url}" in err
    with Scripted((429, {}, 0), (200, {}, 0)) as receiver:
        code, stdout, err = run("export", "--format", "otlp", "--endpoint", receiver.url,
                                "--json", db=db)
    assert code == 0, err
    assert [json.loads(line) for line in err.splitlines()] == [
        {"retry": 1, "of": 4, "endpoint": receiver.url, "reason": "HTTP 429", "wait_s": 0.01}]
    assert json.loads(stdout)["spans"] == 3


def test_a_receiver_that_stays_busy_is_an_export_failed_after_five_tries(db: Path) -> None:
    with Scripted((503, {}, 0)) as receiver:
        code, _, err = run("export", "--format", "otlp", "--endpoint", receiver.url,
                           "--json", db=db)
    *retries, last = err.splitlines()
    error = json.loads(last)
    assert code == 1 and error["error"] == "export_failed"
    assert (error["tries"], error["http_status"], receiver.posts) == (5, 503, 5)
    assert error["message"] == (f"the OTLP endpoint {receiver.url} refused the 3 spans: "
                                "HTTP 503: busy (5 tries)")
    assert [json.loads(line)["wait_s"] for line in retries] == [0.01, 0.02, 0.04, 0.08]


def test_a_plain_refusal_is_not_retried(db: Path) -> None:
    with Scripted((400, {}, 0)) as receiver:
        code, _, err = run("export", "--format", "otlp", "--endpoint", receiver.url,
                           "--json", db=db)
    assert code == 1 and json.loads(err)["tries"] == 1 and receiver.posts == 1


def test_a_cold_receiver_that_times_out_first_then_answers_is_a_success() -> None:
    from tracestore.export.otlp_send import send_otlp_http

    reports: list[dict] = []
    with Scripted((200, {}, 1.0), (200, {}, 0)) as receiver:
        tries = send_otlp_http([], receiver.url, timeout=0.2, base=0.01, report=reports.append)
    assert tries == 2
    assert [(r["retry"], r["reason"]) for r in reports] == [(1, "timed out (ReadTimeout)")]


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    from tracestore.errors import TracestoreError
    from tracestore.export.otlp_send import send_otlp_http

    waits: list[float] = []
    with Scripted((503, {"Retry-After": "3"}, 0), (503, {"Retry-After": "100"}, 0),
                  (503, {}, 0)) as receiver:
        with pytest.raises(TracestoreError) as raised:
            send_otlp_http([], receiver.url, base=0.5, max_wait=10.0, sleep=waits.append)
    # 3 s as asked; 100 s asked but only 7 s of the 10 s budget left; then nothing left.
    assert waits == [3.0, 7.0]
    assert (raised.value.code, raised.value.context["tries"], receiver.posts) == (
        "export_failed", 3, 3)
