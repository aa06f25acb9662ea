"""``tracestore proxy`` relays a realtime WebSocket session and records it: the official
``openai`` realtime client talks through the proxy to a local upstream playing a real
OpenAI Realtime session (``ws_upstream.py``).  One turn completes and is released; the
client cancels the next mid-answer (``response.cancel``, the barge-in), and that attempt
holds a local Stop at the cancel's position and is never released.  The client receives
exactly what the upstream sent, in order; the key the client typed is not stored."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.events import FrameReceived, LocalStopped, TaskRule, TransportDrained
from tracestore.projections.release import decide_release, trace_attempts
from tracestore.proxy.app import proxy_app
from tracestore.proxy.server import RunningProxy
from tracestore.proxy.writer import ProxyRecording

from ws_upstream import WILD_WS, LoopServer, RealtimeUpstream, until_done

SESSION = WILD_WS / "openai" / "pydantic-ai__test_gateway_ws__test_gateway_openai_text_in_audio_out.jsonl"
ACCEPT_ANY = TaskRule(answer_patterns=("",))
KEY = "sk-proj-" + "Zq7" * 12

pytestmark = pytest.mark.skipif(not SESSION.is_file(), reason="../shared/wild-ws is not here")


async def _conversation(proxy_url: str, seen: list[bytes]) -> tuple[dict, dict]:
    from openai import AsyncOpenAI

    ws_url = "ws" + proxy_url[len("http"):]
    client = AsyncOpenAI(api_key=KEY, base_url=f"{proxy_url}/v1",
                         websocket_base_url=f"{ws_url}/v1", max_retries=0)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen.append(await asyncio.wait_for(conn.recv_bytes(), 10))  # session.created
        await conn.session.update(session={"type": "realtime", "output_modalities": ["audio"]})
        seen.append(await asyncio.wait_for(conn.recv_bytes(), 10))  # session.updated
        for text, cancel in ((f"Say hi. (my key is {KEY})", False), ("Tell me a story.", True)):
            await conn.conversation.item.create(item={
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]})
            await conn.response.create()
            if cancel:
                second = await until_done(conn, seen, cancel_at_delta=True)
            else:
                first = await until_done(conn, seen)
    await client.close()
    return first, second


@pytest.fixture
def setup(tmp_path: Path):
    with RealtimeUpstream(SESSION) as upstream, \
            Recorder(f"sqlite:///{tmp_path / 'ws.db'}") as rec:
        recording = ProxyRecording(rec, task=ACCEPT_ANY)
        with RunningProxy(proxy_app([("", upstream.url)], recording, timeout=10)) as proxy:
            yield upstream, recording, proxy, rec
        recording.close()


def _wait_recorded(recording: ProxyRecording, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not (recording.sessions or recording.failures) and time.monotonic() < deadline:
        time.sleep(0.02)
    recording.flush()


def test_realtime_session_through_the_proxy_is_relayed_and_recorded(setup) -> None:
    upstream, recording, proxy, rec = setup
    seen: list[bytes] = []
    first, second = asyncio.run(_conversation(proxy.url, seen))
    assert first["response"]["status"] == "completed"
    assert second["response"]["status"] == "cancelled"

    # The relay is faithful: exactly the upstream's messages, in order, byte for byte.
    assert [m.decode() for m in seen] == upstream.sent
    # Both legs carried the client's credentials; the upstream saw the client's messages.
    assert ("Authorization", f"Bearer {KEY}") in upstream.headers or \
        ("authorization", f"Bearer {KEY}") in upstream.headers
    assert [m["type"] for m in upstream.received].count("response.cancel") == 1

    _wait_recorded(recording)
    assert not recording.failures
    [session] = recording.sessions
    events = rec.store.read()
    attempts = trace_attempts(events)
    assert len(attempts) == 2
    done, cut = attempts
    assert done.endswith("_1") and cut.endswith("_2")
    assert decide_release(events, done).status == "released"
    assert decide_release(events, cut).status != "released"

    # The Stop is where the cancel arrived: after every server message the proxy had
    # relayed before it, before those that came after (the cancelled response.done).
    blob = rec.store.get_blob(session.sha256)
    assert blob is not None and KEY.encode() not in blob  # redacted before storing
    lines = [json.loads(line) for line in blob.splitlines()]
    cancel_line = next(i for i, line in enumerate(lines)
                       if line["dir"] == "client" and line["data"].get("type") == "response.cancel")
    body = [e.event for e in events if getattr(e.event, "attempt_id", None) == cut]
    stops = [i for i, e in enumerate(body) if isinstance(e, LocalStopped)]
    assert len(stops) == 1
    frames = [(i, e.index) for i, e in enumerate(body) if isinstance(e, FrameReceived)]
    assert all(index < cancel_line for i, index in frames if i < stops[0])
    assert all(index > cancel_line for i, index in frames if i > stops[0])
    assert any(i > stops[0] for i, _ in frames)  # the cancelled response.done came after
    assert body[stops[0]].observed_at == lines[cancel_line]["t"]
    assert [e.outcome for e in body if isinstance(e, TransportDrained)] == ["clean"]
    # Each relayed message is one line, and the client's close ends the session.
    assert len(lines) == len(seen) + len(upstream.received) + 1
    assert lines[-1]["kind"] == "close" and lines[-1]["data"]["ok"] is True


class _Plain(LoopServer):
    """A bare WebSocket upstream: refuses the upgrade with 401 on ``/refuse``; elsewhere
    echoes one message and closes with code 4001."""

    def __enter__(self) -> _Plain:
        from websockets.asyncio.server import serve

        def refuse(conn, request):
            if request.path.startswith("/refuse"):
                return conn.respond(401, "bad key\n")
            return None

        async def echo(ws) -> None:
            await ws.send(await ws.recv())
            await ws.close(4001, "bye")

        async def start():
            return await serve(echo, "127.0.0.1", 0, process_request=refuse)

        self._serve(start)
        return self


def test_close_codes_refusals_and_an_unreadable_session(tmp_path: Path) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    async def talk(url: str) -> tuple[str, int | None, str | None]:
        async with connect(url) as ws:
            await ws.send("not a realtime event")
            echoed = await ws.recv()
            try:
                await ws.recv()
            except ConnectionClosed as exc:
                return str(echoed), exc.rcvd.code if exc.rcvd else None, \
                    exc.rcvd.reason if exc.rcvd else None
        raise AssertionError("the upstream's close never came")

    async def refused(url: str) -> int:
        try:
            async with connect(url):
                pass
        except InvalidStatus as exc:
            return exc.response.status_code
        raise AssertionError("the upgrade was accepted")

    with _Plain() as upstream, Recorder(f"sqlite:///{tmp_path / 'ws.db'}") as rec:
        recording = ProxyRecording(rec, task=ACCEPT_ANY)
        app = proxy_app([("/none", "http://127.0.0.1:9"), ("", upstream.url)], recording,
                        timeout=10)
        with RunningProxy(app) as proxy:
            ws = "ws" + proxy.url[len("http"):]
            # The upstream's close code and reason reach the client as sent.
            assert asyncio.run(talk(f"{ws}/echo")) == ("not a realtime event", 4001, "bye")
            # A refused upgrade is the upstream's answer; an unreachable upstream is 502.
            assert asyncio.run(refused(f"{ws}/refuse")) == 401
            assert asyncio.run(refused(f"{ws}/none/x")) == 502
            _wait_recorded(recording)
        recording.close()
    # The session tells no protocol: refused by the ingest, logged, nothing stored.
    assert [f.code for f in recording.failures] == ["unknown_provider"]
    assert not recording.sessions


def test_the_proxy_stopping_records_the_open_session(tmp_path: Path) -> None:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    with RealtimeUpstream(SESSION) as upstream, contextlib.ExitStack() as stack, \
            Recorder(f"sqlite:///{tmp_path / 'ws.db'}") as rec:
        recording = ProxyRecording(rec, task=ACCEPT_ANY)
        with RunningProxy(proxy_app([("", upstream.url)], recording, timeout=10)) as proxy:
            client = stack.enter_context(
                connect("ws" + proxy.url[len("http"):] + "/v1/realtime?model=m"))
            assert json.loads(client.recv(10))["type"] == "session.created"
        with pytest.raises(ConnectionClosed) as closed:
            client.recv(10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012
        _wait_recorded(recording)
        recording.close()
        assert not recording.failures
        [session] = recording.sessions
        lines = [json.loads(line) for line in rec.store.get_blob(session.sha256).splitlines()]
    assert [line["data"].get("type") for line in lines[:-1]] == ["session.created"]
    assert lines[-1]["kind"] == "close" and lines[-1]["data"]["code"] == 1012


def test_a_session_keeps_at_most_its_bound_and_says_so() -> None:
    from tracestore.proxy.websocket import SessionRecord

    record = SessionRecord("t", None, "/v1/realtime", max_bytes=10)
    record.add("client", "12345")
    record.add("server", b"67890")
    assert not record.cut and [m[2] for m in record.messages] == ["12345", b"67890"]
    record.add("server", "x")  # one byte past the bound: kept no more
    record.add("server", "y")
    assert record.cut and len(record.messages) == 2 and record.kept_bytes == 11
