"""What the tests drive: the running app over HTTP, the scenarios and their answer."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from chat_app import ChatApp

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
#: The answer every scenario plays (fixtures/wild/openai-chat/ddt__completion_stream.sse).
ANSWER = "Not much, just here to chat and assist you with anything you need. How are you?"


@dataclass
class Running:
    url: str
    app: ChatApp
    mock: Any
    http: httpx.Client

    def ask(self, question: str = "What's up?") -> str:
        response = self.http.post("/ask", json={"question": question})
        response.raise_for_status()
        return str(response.json()["turn"])

    def post(self, path: str) -> dict[str, Any]:
        response = self.http.post(path)
        response.raise_for_status()
        return dict(response.json())

    def state(self, turn: str) -> dict[str, Any]:
        return dict(self.http.get(f"/turns/{turn}").json())

    def events(self, turn: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """The page's SSE stream of ``turn``, event by event (closed when left)."""
        with self.http.stream("GET", f"/stream/{turn}") as response:
            kind = None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kind = line[len("event: "):]
                elif line.startswith("data: ") and kind is not None:
                    yield kind, json.loads(line[len("data: "):])

    def wait(self, what: Callable[[], bool], seconds: float = 10.0) -> None:
        deadline = time.monotonic() + seconds
        while not what():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.02)
