"""``record_realtime`` records an application's own ``openai`` realtime session, no proxy:
the official client (sync and async) talks straight to a local upstream playing a real
OpenAI Realtime session (``ws_upstream.py``).  One turn completes and is released; the
client cancels the next mid-answer (``response.cancel``) and that attempt holds a Stop and
is never released.  The key typed in a message is not stored; the application's
connection behaves as unrecorded (it reads exactly what the upstream sent)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.events import LocalStopped, TaskRule, TransportDrained
from tracestore.projections.release import decide_release, trace_attempts
from tracestore.recording import record_realtime

from ws_upstream import WILD_WS, RealtimeUpstream, until_done

SESSION = WILD_WS / "openai" / "pydantic-ai__test_gateway_ws__test_gateway_openai_text_in_audio_out.jsonl"
ACCEPT_ANY = TaskRule(answer_patterns=("",))
KEY = "sk-proj-" + "Zq7" * 12
TURNS = ((f"Say hi. (my key is {KEY})", False), ("Tell me a story.", True))

pytestmark = pytest.mark.skipif(not SESSION.is_file(), reason="../shared/wild-ws is not here")


def _clients(url: str) -> tuple[str, str]:
    return f"{url}/v1", "ws" + url[len("http"):] + "/v1"


def _sync_conversation(url: str, rec: Recorder, seen: list[bytes]) -> object:
    from openai import OpenAI

    base, ws = _clients(url)
    client = OpenAI(api_key=KEY, base_url=base, websocket_base_url=ws, max_retries=0)
    recording = record_realtime(client.realtime.connect(model="gpt-realtime"), rec,
                                trace="live-sync", task=ACCEPT_ANY)
    with recording as conn:
        seen.append(conn.recv_bytes())  # session.created
        conn.session.update(session={"type": "realtime", "output_modalities": ["audio"]})
        seen.append(conn.recv_bytes())  # session.updated
        for text, cancel in TURNS:
            conn.conversation.item.create(item={
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]})
            conn.response.create()
            cancelled = False
            for event in conn:  # iteration, as applications read
                seen.append(event.to_json(indent=None).encode())
                if cancel and not cancelled and event.type.endswith("transcript.delta"):
                    conn.response.cancel()
                    cancelled = True
                if event.type == "response.done":
                    break
    client.close()
    return recording


async def _async_conversation(url: str, rec: Recorder, seen: list[bytes]) -> object:
    from openai import AsyncOpenAI

    base, ws = _clients(url)
    client = AsyncOpenAI(api_key=KEY, base_url=base, websocket_base_url=ws, max_retries=0)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        recording = record_realtime(conn, rec, trace="live-async", task=ACCEPT_ANY)
        seen.append(await asyncio.wait_for(conn.recv_bytes(), 10))
        await conn.session.update(session={"type": "realtime", "output_modalities": ["audio"]})
        seen.append(await asyncio.wait_for(conn.recv_bytes(), 10))
        for text, cancel in TURNS:
            await conn.conversation.item.create(item={
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]})
            await conn.response.create()
            await until_done(conn, seen, cancel_at_delta=cancel)
    await client.close()
    return recording


def _check(rec: Recorder, recording, upstream: RealtimeUpstream, trace: str) -> None:
    assert not recording.failures
    [session] = recording.sessions
    events = rec.store.read()
    attempts = [a for a in trace_attempts(events) if a.startswith(trace)]
    done, cut = attempts
    assert decide_release(events, done).status == "released"
    assert decide_release(events, cut).status != "released"
    body = [e.event for e in events if getattr(e.event, "attempt_id", None) == cut]
    assert sum(isinstance(e, LocalStopped) for e in body) == 1
    assert [e.outcome for e in body if isinstance(e, TransportDrained)] == ["clean"]

    blob = rec.store.get_blob(session.sha256)
    assert blob is not None and KEY.encode() not in blob  # redacted before storing
    lines = [json.loads(line) for line in blob.splitlines()]
    # Every message both ways, in order, then the application's close.
    assert [json.dumps(line["data"]) for line in lines if line["dir"] == "server"] == \
        [json.dumps(json.loads(m)) for m in upstream.sent]
    assert [line["data"]["type"] for line in lines if line["dir"] == "client"
            and "kind" not in line] == [m["type"] for m in upstream.received]
    assert lines[-1]["kind"] == "close" and lines[-1]["dir"] == "client"
    assert lines[-1]["data"]["ok"] is True


def test_sync_client_session_recorded_at_the_with_block_end(tmp_path: Path) -> None:
    seen: list[bytes] = []
    with RealtimeUpstream(SESSION) as upstream, \
            Recorder(f"sqlite:///{tmp_path / 'rt.db'}") as rec:
        recording = _sync_conversation(upstream.url, rec, seen)
        _check(rec, recording, upstream, "live-sync")
    assert len(seen) == len(upstream.sent)


def test_async_client_session_recorded_at_its_close(tmp_path: Path) -> None:
    seen: list[bytes] = []
    with RealtimeUpstream(SESSION) as upstream, \
            Recorder(f"sqlite:///{tmp_path / 'rt.db'}") as rec:
        recording = asyncio.run(_async_conversation(upstream.url, rec, seen))
        _check(rec, recording, upstream, "live-async")
    # The application read exactly what the upstream sent, byte for byte.
    assert [m.decode() for m in seen] == upstream.sent


def test_a_session_open_at_exit_is_recorded(tmp_path: Path) -> None:
    db = tmp_path / "rt.db"
    script = textwrap.dedent(f"""
        import openai
        from tracestore import Recorder
        from tracestore.recording import record_realtime
        rec = Recorder({f"sqlite:///{db}"!r})
        client = openai.OpenAI(api_key="k", base_url=%r, websocket_base_url=%r)
        conn = client.realtime.connect(model="m").enter()
        record_realtime(conn, rec, trace="at-exit")
        conn.recv_bytes()
        conn.send({{"type": "session.update", "session": {{"type": "realtime"}}}})
        conn.recv_bytes()
    """)
    with RealtimeUpstream(SESSION) as upstream:
        base, ws = _clients(upstream.url)
        done = subprocess.run([sys.executable, "-c", script % (base, ws)], timeout=60,
                              capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with Recorder(f"sqlite:///{db}") as rec:
        events = rec.store.read(trace_id="at-exit")
        [blob_sha] = {e.event.sha256 for e in events if e.event.type == "capture.stored"}
        lines = rec.store.get_blob(blob_sha).splitlines()
    assert [json.loads(line)["data"]["type"] for line in lines] == \
        ["session.created", "session.update", "session.updated"]
