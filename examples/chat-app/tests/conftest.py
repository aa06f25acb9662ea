"""The app served on a free port of 127.0.0.1 from a thread, its SDK pointed at a
``tracestore_mock`` playing one of ``scenarios/``, recording into ``tracestore_recorder``."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from chat_harness import SCENARIOS, Running

from chat_app import ChatApp


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def chat(tracestore_mock: Any, tracestore_recorder: Any
         ) -> Iterator[Callable[..., Running]]:
    """``chat("stop.json")`` (or ``chat("stop.json", BuggyChatApp)``): the app running; a
    scenario is a name in ``scenarios/`` or a path, and ``options`` (``task=…``) go to the
    app's constructor."""
    servers: list[tuple[uvicorn.Server, threading.Thread, httpx.Client]] = []

    def start(scenario: str | Path, app_class: type[ChatApp] = ChatApp,
              **options: Any) -> Running:
        mock = tracestore_mock(SCENARIOS / scenario)
        app = app_class(tracestore_recorder, base_url=f"{mock.url}/v1", api_key="sk-test",
                        **options)
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(app.app, host="127.0.0.1", port=port,
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the app did not start"
            time.sleep(0.01)
        url = f"http://127.0.0.1:{port}"
        http = httpx.Client(base_url=url, timeout=10)
        servers.append((server, thread, http))
        return Running(url, app, mock, http)

    yield start
    for server, thread, http in servers:
        http.close()
        server.should_exit = True
        thread.join(10)
