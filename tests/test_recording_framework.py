"""Issue 18: a framework that sits on the official SDKs records correctly through the same
transport — LangChain's ``ChatOpenAI(http_client=…)`` streaming Chat Completions from the
local capture server: a full read is released as ``ingest`` of the bytes decides, a Stop
(the framework's stream closed early) is the user's Stop."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from tracestore.events import TaskRule
from tracestore.ingest import plan_ingest
from tracestore.recording.httpx_capture import RecordingTransport

from capture_server import CaptureServer, route_for
from conftest import FIXTURES
from test_recording_turns import rec, server  # noqa: F401  (the same fixtures)

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
pytestmark = pytest.mark.usefixtures("frozen_heap")

langchain_openai = pytest.importorskip("langchain_openai", reason="langchain-openai is a "
                                       "test extra (pip install -e '.[test]')")

CHAT = FIXTURES / "real" / "openai-chat" / "text-usage-moderation-gpt-5.sse"
TASK = {"answer_patterns": ["."]}


def chat_model(server: CaptureServer, transport: RecordingTransport):
    return langchain_openai.ChatOpenAI(
        model="gpt-5", api_key="t", base_url=f"{server.url}/v1", max_retries=0,
        http_client=httpx.Client(transport=transport))


def ingested_decision(path: Path):
    from tracestore.events import StoredEvent
    from tracestore.projections import decide_release

    plan = plan_ingest(path.read_bytes(), filename=path.name, attempt_id="a",
                       task=TaskRule.model_validate(TASK))
    events = [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1,
                          "2026-12-01T00:00:00+00:00", n.trace_id, n.event, "")
              for i, n in enumerate(plan.events)]
    return decide_release(events, "a")


def test_langchain_streaming_a_full_answer_is_released_as_ingest_decides(rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    llm = chat_model(server, RecordingTransport())
    with rec.turn("lc-full", task=TASK) as turn:
        text = "".join(str(chunk.content) for chunk in llm.stream("Say something"))
    (handle,) = turn.attempts
    live, offline = handle.decision(), ingested_decision(CHAT)
    assert (live.status, live.reasons, live.answer) == (
        offline.status, offline.reasons, offline.answer)
    assert live.status == "released" and live.answer == text


def test_langchain_stream_closed_early_is_the_users_stop(rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    llm = chat_model(server, RecordingTransport())
    with rec.turn("lc-stop", task=TASK) as turn:
        stream = llm.stream("Say something")
        next(stream)
        stream.close()  # the app's Stop: LangChain closes the SDK stream it holds
    (handle,) = turn.attempts
    decision = handle.decision()
    assert (decision.status, decision.reasons) == ("stopped", ("local_stop_before_release",))
