"""Every real realtime session in ``../shared/wild-ws`` ingests, and each response's status
and text are what the official SDKs' own types read from the same server messages.

The expectation never comes from tracestore's normalizers: OpenAI Realtime messages are
parsed with ``openai.types.realtime.RealtimeServerEvent`` (the beta twin for the
``gpt-4o-realtime-preview`` sessions) and Gemini Live messages with
``google.genai.types.LiveServerMessage``; a session that speaks the beta event names (Azure
does, with GA models) is read with the beta types first, and a message one dialect's types
reject is offered to the other's; a message both reject is skipped and counted (xAI's
``response.created`` and ``response.done`` carry fields neither allows: a turn then starts
at the first delta naming its response, and its status is its ``response.done``'s JSON,
counted apart).  A response's text is its text or transcript deltas joined in order.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tracestore.events import TaskRule
from tracestore.ingest.pipeline import IngestOptions, ingest_input
from tracestore.projections.release import decide_with_view, trace_attempts
from tracestore.store.log import EventStore

WILD_WS = Path(__file__).resolve().parents[2] / "shared" / "wild-ws"
SESSIONS = sorted(WILD_WS.glob("*/*.jsonl")) if WILD_WS.is_dir() else []
ACCEPT_ANY = TaskRule(answer_patterns=("",))

pytestmark = pytest.mark.skipif(not SESSIONS, reason="../shared/wild-ws is not here")

# What the corpus holds (docs/providers.md, "Realtime sessions", states the same numbers).
SESSION_COUNT = 56
TURNS = 72
COMPLETED = 70
CUT_OFF = 2
RELEASED = 50
HELD = 22
#: Why the held turns are held: a tool call (the text profile allows none) or Gemini's
#: thought parts (reasoning); the two cut-off turns are tool calls, held as they arrive.
HELD_REASONS = {"tool_use_not_allowed": 17, "non_text_content": 5}
STATUS_FROM_JSON = 25
SESSION_ERRORS = 1


@dataclass
class Turn:
    key: str | None
    status: str | None = None
    "The SDK's status: ``response.status`` (OpenAI), ``completed`` / ``interrupted`` (Gemini)."
    text: str = ""


@dataclass
class Expected:
    provider: str
    turns: list[Turn] = field(default_factory=list)
    skipped: int = 0
    "Server messages no SDK type reads."
    status_from_json: int = 0
    "Turns whose ``response.done`` no SDK type reads: the status is its JSON's."
    errors: int = 0


#: Event names only the beta protocol has: Azure OpenAI and Azure Voice Live sessions speak
#: it with GA models, so the dialect is told by the events, not by the model's name.
BETA_ONLY = frozenset({"response.text.delta", "response.audio_transcript.delta",
                       "response.audio.delta", "conversation.item.created"})


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _openai_expected(lines: list[dict[str, Any]]) -> Expected:
    from openai.types.beta.realtime import RealtimeServerEvent as Beta
    from openai.types.realtime import RealtimeServerEvent
    from pydantic import TypeAdapter, ValidationError

    server = [r["data"] for r in lines if r["dir"] == "server" and r.get("kind") is None]
    model = next((d["session"].get("model") for d in server
                  if d.get("type") == "session.created"), None) or ""
    ga: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
    beta: TypeAdapter[Any] = TypeAdapter(Beta)
    dialect = model.startswith("gpt-4o-realtime-preview") or any(
        d.get("type") in BETA_ONLY for d in server)
    adapters = (beta, ga) if dialect else (ga, beta)
    out = Expected("openai-realtime")
    by_id: dict[str, Turn] = {}

    def turn_of(response_id: str) -> Turn:
        if response_id not in by_id:
            by_id[response_id] = Turn(response_id)
            out.turns.append(by_id[response_id])
        return by_id[response_id]

    for data in server:
        event = None
        for adapter in adapters:  # the session's dialect first, then its twin
            try:
                event = adapter.validate_python(data)
                break
            except ValidationError:
                continue
        if event is None:
            out.skipped += 1
            if data.get("type") == "response.done":  # neither type reads it: its JSON does
                out.status_from_json += 1
                turn_of(data["response"]["id"]).status = data["response"]["status"]
            continue
        etype = event.type
        if etype == "response.created":
            turn_of(event.response.id)
        elif etype in ("response.output_text.delta", "response.text.delta",
                       "response.output_audio_transcript.delta",
                       "response.audio_transcript.delta"):
            turn_of(event.response_id).text += event.delta
        elif etype == "response.done":
            turn_of(event.response.id).status = event.response.status
        elif etype == "error":
            out.errors += 1
    return out


def _gemini_expected(lines: list[dict[str, Any]]) -> Expected:
    from google.genai.types import LiveServerMessage
    from pydantic import ValidationError

    out = Expected("gemini-live")
    current: Turn | None = None
    for record in lines:
        if record["dir"] != "server" or record.get("kind") is not None:
            continue
        try:
            msg = LiveServerMessage.model_validate(record["data"])
        except ValidationError:
            out.skipped += 1
            raw = record["data"].get("serverContent") or {}
            if raw.get("turnComplete") is True and current is not None:
                out.status_from_json += 1  # neither SDK type reads it: its JSON does
                current.status, current = current.status or "completed", None
            continue
        content = msg.server_content
        if content is None and msg.tool_call is None:
            continue
        if current is None:
            current = Turn(None)
            out.turns.append(current)
        current.text += msg.text or ""
        if content is not None and content.output_transcription is not None:
            current.text += content.output_transcription.text or ""
        if content is not None and content.interrupted:
            current.status = "interrupted"
        if content is not None and content.turn_complete:
            current.status = current.status or "completed"
            current = None
    return out


def expected(path: Path) -> Expected:
    lines = _lines(path)
    first = next(r["data"] for r in lines if r.get("kind") is None)
    gemini = any(key in first for key in ("setup", "setupComplete"))
    return _gemini_expected(lines) if gemini else _openai_expected(lines)


def _native_status(view: Any, api: str) -> str | None:
    if not view.terminals:
        return None
    terminal = view.terminals[0]
    if api == "gemini-live":
        return "completed" if terminal.native_type == "turnComplete" else terminal.native_type
    return terminal.status  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    opened = EventStore(f"sqlite:///{tmp_path_factory.mktemp('wild-ws') / 'ws.db'}")
    yield opened
    opened.close()


def test_the_corpus_is_the_one_described() -> None:
    index = [json.loads(line) for line in (WILD_WS / "index.jsonl").read_text().splitlines()]
    assert len(SESSIONS) == len(index) == SESSION_COUNT


def test_every_session_ingests_and_reads_as_the_sdks_read_it(store: EventStore) -> None:
    counts: Counter[str] = Counter()
    held: Counter[str] = Counter()
    for path in SESSIONS:
        data = path.read_bytes()
        want = expected(path)
        counts["sdk_skipped"] += want.skipped
        counts["session_errors"] += want.errors
        counts["status_from_json"] += want.status_from_json
        done = ingest_input(store, data, IngestOptions(filename=path.name, task=ACCEPT_ANY))
        assert done.format == "realtime-session"
        events = store.read(trace_id=f"{path.name.split('.', 1)[0]}-{done.sha256[:8]}")
        attempts = trace_attempts(events)
        assert attempts == list(done.attempts), path.name
        assert len(attempts) == len(want.turns), path.name
        for attempt, turn in zip(attempts, want.turns):
            decision, view = decide_with_view(events, attempt)
            assert view.api == want.provider
            where = f"{path.name} {attempt}"
            assert _native_status(view, want.provider) == turn.status, where
            assert view.text == turn.text, where
            if turn.key is not None:  # attempt ids carry the response id
                assert attempt.endswith(f"-{turn.key}"), where
            counts["turns"] += 1
            counts["completed" if turn.status == "completed" else "cut_off"] += 1
            if decision.status == "released":
                counts["released"] += 1
                assert decision.answer == turn.text, where
            else:
                assert turn.status != "completed" or decision.status == "held", where
                counts["held" if decision.status == "held" else decision.status] += 1
                held[decision.reasons[0]] += 1
            if turn.status is None:  # cut off by the end of the recording
                assert decision.status != "released", where
        # every frame points at its own line of the stored bytes
        for stored in events:
            if stored.type == "frame.received":
                frame = stored.event
                line = json.loads(data[frame.offset:frame.offset + frame.length])
                assert line["data"] == frame.native and line["dir"] == "server"
    print(dict(counts), dict(held))
    assert counts["turns"] == TURNS
    assert counts["completed"] == COMPLETED
    assert counts["cut_off"] == CUT_OFF
    assert counts["released"] == RELEASED
    assert counts["held"] == HELD
    assert counts["status_from_json"] == STATUS_FROM_JSON
    assert held == Counter(HELD_REASONS)
    assert counts["session_errors"] == SESSION_ERRORS


def test_ingesting_a_session_again_adds_nothing(store: EventStore) -> None:
    path = SESSIONS[0]
    first = ingest_input(store, path.read_bytes(), IngestOptions(filename=path.name,
                                                                  task=ACCEPT_ANY))
    again = ingest_input(store, path.read_bytes(), IngestOptions(filename=path.name,
                                                                  task=ACCEPT_ANY))
    assert again.written.appended == 0
    assert again.attempts == first.attempts
