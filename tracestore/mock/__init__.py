"""``tracestore mock``: a local provider that plays real streams with scripted faults.

Point an official SDK's base URL at it and it answers as the provider would, byte for byte
from a capture: OpenAI Chat Completions and Responses, Anthropic Messages, Gemini, Ollama or
any API whose responses you captured.  A scenario file (``scenario.MockScenario``, JSON
Schema from ``tracestore mock --schema``) lists the exchanges; a recorded request body is
matched exactly (``replay_request_mismatch`` names the first field that differs, a path
played out answers ``replay_exhausted``); faults pace, stall, cut or refuse a response, or
rewrite its frames in the provider's own form (``frame_faults``).  The exchanges can also
come from a store's recorded live attempts (``from_store``).

``RunningMock`` serves one from a thread (tests; the pytest plugin's ``tracestore_mock``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracestore.mock.app import LOG_PATH, MockApp
from tracestore.mock.scenario import MockScenario, load, with_store


def mock_app(scenario: Path | str | None = None, *, from_store: str | None = None,
             trace: str | None = None) -> MockApp:
    """The app for a scenario file and/or the attempts recorded in the store ``from_store``
    (a database URL or SQLite path; ``trace``: only that trace's), with typed errors for a
    bad one, before anything serves."""
    loaded, bodies = load(Path(scenario)) if scenario is not None else (None, [])
    if from_store is not None:
        loaded, bodies = with_store(loaded, bodies, from_store, trace)
    if loaded is None:
        from tracestore.errors import InputError

        raise InputError("a mock needs a scenario file or a store to play",
                         code="missing_option")
    return MockApp(loaded, bodies)


class RunningMock:
    """``with RunningMock("scenario.json") as mock: mock.url`` -- served from a thread on a
    free port of 127.0.0.1; ``mock.log`` is the server's record of each request."""

    def __init__(self, scenario: Path | str | None = None, host: str = "127.0.0.1",
                 port: int = 0, *, from_store: str | None = None,
                 trace: str | None = None) -> None:
        from tracestore.proxy.server import RunningProxy

        self.app = mock_app(scenario, from_store=from_store, trace=trace)
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
