"""``tracestore mock``: a local provider that plays real streams with scripted faults.

Point an official SDK's base URL at it and it answers as the provider would, byte for byte
from a capture: OpenAI Chat Completions and Responses, Anthropic Messages, Gemini, Ollama or
any API whose responses you captured.  A scenario file (``scenario.MockScenario``, JSON
Schema from ``tracestore mock --schema``) lists the exchanges; a recorded request body is
matched exactly (``replay_request_mismatch`` names the first field that differs, a path
played out answers ``replay_exhausted``); faults pace, stall, cut or refuse a response.

``RunningMock`` serves one from a thread (tests; the pytest plugin's ``tracestore_mock``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracestore.mock.app import LOG_PATH, MockApp
from tracestore.mock.scenario import MockScenario, load


def mock_app(scenario: Path | str) -> MockApp:
    """The app for a scenario file (typed errors for a bad one, before anything serves)."""
    loaded, bodies = load(Path(scenario))
    return MockApp(loaded, bodies)


class RunningMock:
    """``with RunningMock("scenario.json") as mock: mock.url`` -- served from a thread on a
    free port of 127.0.0.1; ``mock.log`` is the server's record of each request."""

    def __init__(self, scenario: Path | str, host: str = "127.0.0.1", port: int = 0) -> None:
        from tracestore.proxy.server import RunningProxy

        self.app = mock_app(scenario)
        self._server = RunningProxy(self.app, host, port)

    @property
    def url(self) -> str:
        return str(self._server.url)

    @property
    def log(self) -> list[dict[str, Any]]:
        return self.app.log

    def __enter__(self) -> RunningMock:
        self._server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.__exit__(*exc)


__all__ = ["LOG_PATH", "MockApp", "MockScenario", "RunningMock", "mock_app"]
