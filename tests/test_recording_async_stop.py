"""An asyncio application's Stop: the task reading an ``AsyncOpenAI`` stream is cancelled
mid-read and the stream closed, as an async web server stops an answer.  The recorder
records that as the application's Stop (``stopped``, its partial shown cut off is clean),
never as the body breaking (``interrupted``, ``drain_error``: CancelledError)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tracestore.mock.pytest_plugin import assert_clean

# ddt__completion_stream.sse: a 23-event Chat Completions stream (fixtures/wild/PROVENANCE.md)
CHAT = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / "openai-chat" / \
    "ddt__completion_stream.sse"


# The process writer (the default on a SQLite file): the handle is read after the client,
# and with it the writer process, was closed.
@pytest.mark.parametrize("writer", ["thread", "process"])
def test_a_cancelled_read_then_close_is_a_stop(tracestore_mock, tracestore_recorder,
                                               tmp_path: Path, writer: str) -> None:
    import httpx2
    import openai

    from tracestore.recording import attempt_of
    from tracestore.recording.httpx_capture import AsyncRecordingTransport

    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"exchanges": [{
        "path": "/v1/chat/completions", "capture": str(CHAT),
        "faults": {"chunk_bytes": 300, "delay_ms": 40}}]}))
    mock = tracestore_mock(scenario)
    turn = tracestore_recorder.turn("async-stop", task={"answer_patterns": [r"\w"]})
    shown: list[str] = []
    handles: list[object] = []

    async def main() -> None:
        client = openai.AsyncOpenAI(
            base_url=f"{mock.url}/v1", api_key="sk-test", max_retries=0,
            http_client=httpx2.AsyncClient(transport=AsyncRecordingTransport(writer=writer)))

        async def read() -> None:
            with turn:
                stream = await client.chat.completions.create(
                    model="gpt-5", stream=True, messages=[{"role": "user", "content": "Hi"}])
                handles.append(attempt_of(stream))
                try:
                    async for chunk in stream:
                        shown.extend(c.delta.content or "" for c in chunk.choices)
                finally:
                    await stream.close()

        task = asyncio.create_task(read())
        while len("".join(shown)) < 5:
            await asyncio.sleep(0.01)
        task.cancel()  # the user pressed Stop while the next chunk was awaited
        await asyncio.gather(task, return_exceptions=True)
        handles[0].destination("ui", "".join(shown), cut_off=True)  # type: ignore[attr-defined]
        await client.close()

    asyncio.run(main())
    decision = handles[0].decision()  # type: ignore[attr-defined]
    assert decision.status == "stopped", decision.reasons
    assert_clean(tracestore_recorder, "async-stop")
