"""Prompt recording is opt-in: ``Recorder(record_prompts=True)`` and ``tracestore proxy
--record-prompts`` keep a request's messages in ``attempt.started``, redacted and bounded
(``tracestore.recording.prompts``); without it no message text reaches the database.

The SDK paths are the real ``openai`` client through the recording transport (the writer
thread and the process writer) against the local capture server; the proxy is the
``tracestore proxy`` command in front of a fake upstream."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from capture_server import CaptureServer
from capture_server import route_for as capture_route
from conftest import FIXTURES
from proxy_upstream import Upstream
from proxy_upstream import route_for as upstream_route
from tracestore.recording.prompts import CUT_KEY, PROMPT_BYTES, kept_prompt
from tracestore.store.log import EventStore
from tracestore.text.redaction import REDACTED

REPO = Path(__file__).resolve().parents[1]
CHAT = FIXTURES / "real" / "openai-chat" / "text-usage-moderation-gpt-5.sse"
ANTHROPIC = FIXTURES / "real" / "anthropic" / "text-basic.sse"
QUESTION = "What is the capital of France? (prompt-marker-7f3a)"
SYSTEM = "Answer in one sentence, system-marker-91c2."
KEY = "sk-proj-" + "Q" * 40
MESSAGES = [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{QUESTION} my key is {KEY}"}]


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _stored_bytes(db: Path) -> bytes:
    """Every byte the SQLite database holds on disk (the file and its journals)."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def _started(db: Path) -> list[dict[str, Any]]:
    with EventStore(f"sqlite:///{db}") as store:
        return [e.event.request or {} for e in store.read() if e.type == "attempt.started"]


def _record_sdk(db: Path, *, prompts: bool, writer: str) -> None:
    import httpx2
    import openai

    from tracestore import Recorder
    from tracestore.recording.httpx_capture import RecordingTransport

    with CaptureServer() as server:
        server.routes["/v1/chat/completions"] = capture_route(CHAT)
        rec = Recorder(f"sqlite:///{db}", record_prompts=prompts)
        transport = RecordingTransport(writer=writer)
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0,
                               http_client=httpx2.Client(transport=transport))
        try:
            with rec.turn("prompted"):
                stream = client.chat.completions.create(model="gpt-5", stream=True,
                                                        messages=MESSAGES)
                for _ in stream:
                    pass
            transport.flush()
            assert transport.failures == []
        finally:
            client.close()
            rec.close()


def _check_kept(request: dict[str, Any]) -> None:
    assert request["model"] == "gpt-5"
    assert request["messages"][0] == {"role": "system", "content": SYSTEM}
    assert request["messages"][1] == {"role": "user",
                                      "content": f"{QUESTION} my key is {REDACTED}"}
    assert CUT_KEY not in request


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_by_default_no_message_text_reaches_the_database(tmp_path: Path, writer: str) -> None:
    db = tmp_path / "off.db"
    _record_sdk(db, prompts=False, writer=writer)
    [request] = _started(db)
    assert request["model"] == "gpt-5" and "messages" not in request
    stored = _stored_bytes(db)
    for text in (QUESTION, SYSTEM, "prompt-marker-7f3a", "system-marker-91c2", KEY):
        assert text.encode() not in stored


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_opted_in_the_messages_are_in_attempt_started_redacted(tmp_path: Path,
                                                               writer: str) -> None:
    db = tmp_path / "on.db"
    _record_sdk(db, prompts=True, writer=writer)
    [request] = _started(db)
    _check_kept(request)
    stored = _stored_bytes(db)
    assert b"prompt-marker-7f3a" in stored
    assert KEY.encode() not in stored and b"QQQQQQQQQQQQQQQQ" not in stored


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("prompts", [False, True], ids=["default", "record-prompts"])
def test_the_proxy_keeps_prompts_only_with_record_prompts(tmp_path: Path,
                                                          prompts: bool) -> None:
    db = tmp_path / "proxy.db"
    port = _free_port()
    with Upstream() as upstream:
        upstream.routes["/v1/messages"] = upstream_route(ANTHROPIC)
        proxy = subprocess.Popen(
            [sys.executable, "-m", "tracestore", "proxy", "--upstream", upstream.url,
             "--listen", f"127.0.0.1:{port}", "--db", str(db),
             *(["--record-prompts"] if prompts else [])],
            cwd=REPO, env={**os.environ, "TRACESTORE_DB": ""}, stderr=subprocess.PIPE,
            text=True)
        try:
            assert proxy.stderr is not None
            assert "listening on" in proxy.stderr.readline()
            body = {"model": "claude-x", "stream": True, "max_tokens": 64,
                    "system": SYSTEM, "messages": MESSAGES[1:]}
            with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/messages", json=body,
                              timeout=30) as response:
                assert response.status_code == 200
                response.read()
        finally:
            proxy.terminate()
            proxy.communicate(timeout=30)
    [request] = _started(db)
    assert request["model"] == "claude-x" and request["max_tokens"] == 64
    stored = _stored_bytes(db)
    assert KEY.encode() not in stored
    if prompts:
        assert request["system"] == SYSTEM
        assert request["messages"] == [{"role": "user",
                                        "content": f"{QUESTION} my key is {REDACTED}"}]
    else:
        assert "messages" not in request and "system" not in request
        assert b"prompt-marker-7f3a" not in stored and b"system-marker-91c2" not in stored


def test_a_long_prompt_is_cut_to_the_cap_newest_first_and_says_so() -> None:
    history = [{"role": "user" if i % 2 else "assistant", "content": f"turn {i} " + "x" * 5000}
               for i in range(40)]
    body = {"model": "m", "system": "s" * 100_000,
            "messages": [*history, {"role": "user", "content": "the question"}]}
    kept = kept_prompt(body)
    marker = kept.pop(CUT_KEY)
    assert marker == {"type": CUT_KEY, "limit_bytes": PROMPT_BYTES,
                      "prompt_bytes": _size({k: body[k] for k in ("system", "messages")})}
    assert _size(kept) <= PROMPT_BYTES
    assert "model" not in kept  # settings are the caller's; only the prompt is here
    # The question being answered is kept, with the newest history before it.
    assert kept["messages"][-1] == {"role": "user", "content": "the question"}
    assert kept["messages"][-2]["content"].startswith("turn 39 ")
    assert len(kept["messages"]) < len(body["messages"])
    assert list(kept) == ["system", "messages"]  # the request's own order


def test_a_key_at_the_cut_is_redacted_whole() -> None:
    """Redaction comes before the cut: a key straddling the cap never leaves a prefix."""
    key = "sk-ant-" + "Z" * 60
    text = "y" * (PROMPT_BYTES - 60) + " " + key + " and more " * 50
    kept = kept_prompt({"messages": [{"role": "user", "content": text}]})
    assert _size({k: v for k, v in kept.items() if k != CUT_KEY}) <= PROMPT_BYTES
    content = kept["messages"][0]["content"]
    assert "ZZZZ" not in content and "sk-ant" not in content
    assert kept[CUT_KEY]["prompt_bytes"] > PROMPT_BYTES


@pytest.mark.parametrize("body", [
    {"input": [{"role": "user", "content": "q"}], "instructions": "be brief"},
    {"contents": [{"role": "user", "parts": [{"text": "q"}]}],
     "systemInstruction": {"parts": [{"text": "be brief"}]}},
    {"messages": [{"role": "user", "content": [{"text": "q"}]}],
     "system": [{"text": "be brief"}]},
], ids=["openai-responses", "gemini", "bedrock"])
def test_each_providers_prompt_fields_are_kept(body: dict[str, Any]) -> None:
    assert kept_prompt({**body, "model": "m", "temperature": 0}) == body
