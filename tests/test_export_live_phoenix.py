"""A turn recorded live, end to end, in a real Arize Phoenix.

The application is the official ``openai`` client with tracestore's recording transport,
streaming a real capture from the local capture server (one SSE event per chunk, paced as a
provider produces tokens).  Attempt 1 is stopped by the application after a few chunks
(closing the stream early records a Stop); attempt 2 retries it, reads to the end and is
released; the application writes its destinations through the attempt handles.  The store's
recorded times and the application's own clock are what the recorder saw; the turn is
recorded with its prompt (``Recorder(record_prompts=True)``) and exported with
``--content`` to Phoenix, whose attempt spans then show the input messages (and without
``--content`` none) (``phoenixhelp``: skipped without
``TRACESTORE_PHOENIX``, failed under ``CI=true``) and read back through its REST API.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from capture_server import CaptureServer, route_for
from clihelp import run
from conftest import FIXTURES
from phoenixhelp import phoenix, phoenix_spans  # noqa: F401 - a fixture

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
#: A long run (a real Phoenix): `pytest -m slow` runs it, and so does .ci/run.
pytestmark = [pytest.mark.usefixtures("frozen_heap"), pytest.mark.slow]

CAPTURE = FIXTURES / "real" / "openai-chat" / "text-usage-moderation-gpt-5.sse"
MESSAGES = [{"role": "system", "content": "Answer in one sentence."},
            {"role": "user", "content": "What is the capital of France?"}]
#: Seconds between two SSE events: long enough that the recorder's writer (which records
#: once the application's reads pause for 20 ms) stamps each event as it arrives.
PACE = 0.06
#: Chunks attempt 1 reads before the application stops it (its role chunk and "Paris").
STOP_AFTER = 2
#: Nanoseconds two clocks may disagree: the writer records a chunk a pause after it arrived.
SLACK_NS = 50_000_000
TASK = {"answer_patterns": [r"\bParis\b"]}
#: ``MESSAGES`` as the GenAI conventions' ``gen_ai.input.messages`` spell them.
INPUT = [{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
         for m in MESSAGES]


@dataclass
class Seen:
    """What the application saw of one attempt on its own clock (ns since the epoch)."""

    attempt_id: str = ""
    opened: int = 0
    first_text: int | None = None
    ended: int = 0
    text: str = ""


@dataclass
class Lived:
    trace_id: str
    attempts: list[Seen] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)


def _read(stream, seen: Seen, stop_after: int | None = None) -> None:
    for n, chunk in enumerate(stream, 1):
        delta = chunk.choices[0].delta.content if chunk.choices else None
        if delta:
            if seen.first_text is None:
                seen.first_text = time.time_ns()
            seen.text += delta
        if n == stop_after:
            break
    stream.close()  # before the native terminal: the application's Stop
    seen.ended = time.time_ns()


def record_turn(db: Path, trace_id: str, *, leak: bool) -> Lived:
    """The T8 shape, lived: a stopped attempt, then a released retry.  ``leak``: the
    application writes the stopped attempt's text to history in place of the answer (the
    audit's ``ineligible_text_in_destination``)."""
    import httpx2
    import openai

    from tracestore import Recorder
    from tracestore.recording import attempt_of
    from tracestore.recording.httpx_capture import RecordingTransport

    lived = Lived(trace_id)
    with CaptureServer() as server:
        server.routes["/v1/chat/completions"] = route_for(CAPTURE, by_event=True, pace=PACE)
        rec = Recorder(f"sqlite:///{db}", record_prompts=True)
        transport = RecordingTransport()
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0,
                               http_client=httpx2.Client(transport=transport))
        try:
            with rec.turn(trace_id, task=TASK) as turn:
                old = Seen(opened=time.time_ns())
                stream = client.chat.completions.create(model="gpt-5", stream=True,
                                                        messages=MESSAGES)
                old_handle = attempt_of(stream)
                old_handle.destination("progress", "Generating answer…")
                _read(stream, old, stop_after=STOP_AFTER)
                with turn.retry():
                    new = Seen(opened=time.time_ns())
                    stream = client.chat.completions.create(model="gpt-5", stream=True,
                                                            messages=MESSAGES)
                    handle = attempt_of(stream)
                    _read(stream, new)
                for destination in ("ui", "history", "export", "copy"):
                    if leak and destination == "history":  # the stopped attempt's text
                        old_handle.destination(destination, old.text)
                    else:
                        handle.destination(destination, new.text)
            old.attempt_id, new.attempt_id = old_handle.attempt_id, handle.attempt_id
            lived.attempts = [old, new]
            lived.statuses = [old_handle.decision().status, handle.decision().status]
            transport.flush()
        finally:
            client.close()
            rec.close()
    gc.collect()
    return lived


def input_messages(attrs: dict) -> list[tuple[str, str]]:
    """OpenInference's ``llm.input_messages.N.message.*`` as (role, content) pairs, from
    the flattened attributes or from the list Phoenix nests them into."""
    nested = attrs.get("llm.input_messages")
    if isinstance(nested, list):
        return [(m["message"]["role"], m["message"]["content"]) for m in nested]
    out, i = [], 0
    while f"llm.input_messages.{i}.message.role" in attrs:
        prefix = f"llm.input_messages.{i}.message"
        out.append((attrs[f"{prefix}.role"], attrs[f"{prefix}.content"]))
        i += 1
    return out


def _ns(stamp: str) -> int:
    when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1_000_000) * 1000


def recorded_times(db: Path, attempt_id: str) -> dict[str, int]:
    """What the recorder stored: the attempt's start (its observed time), its first text
    frame and its drain (the times the store stamped them), ns since the epoch."""
    from tracestore.store.log import EventStore

    with EventStore(str(db)) as store:
        mine = [e for e in store.iter_events() if e.attempt_id == attempt_id]
    [started] = [e for e in mine if e.type == "attempt.started"]
    texts = [e for e in mine if e.type == "frame.received" and isinstance(e.event.native, dict)
             and any((c.get("delta") or {}).get("content")
                     for c in e.event.native.get("choices", []))]
    [drained] = [e for e in mine if e.type == "transport.drained"]
    stamp = _ns(str(started.recorded_at)) if started.event.observed_at is None \
        else _ns(started.event.observed_at)
    return {"start": stamp, "first_text": _ns(str(texts[0].recorded_at)),
            "drain": _ns(str(drained.recorded_at))}


def audit(db: Path, trace_id: str) -> list[str]:
    code, stdout, err = run("audit", "--trace", trace_id, "--json", db=db)
    assert code in (0, 1), err
    return [v["code"] for v in json.loads(stdout)["violations"]]


@pytest.mark.parametrize("leak", [False, True], ids=["clean", "stopped-text-in-history"])
def test_a_live_turn_reaches_phoenix_with_its_real_times(
        tmp_path: Path, phoenix: str, leak: bool,  # noqa: F811 - the fixture
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "live.db"
    trace_id = f"live-{'leak' if leak else 'clean'}"
    lived = record_turn(db, trace_id, leak=leak)
    old, new = lived.attempts
    assert lived.statuses == ["stopped", "released"]
    assert (old.text, new.text) == ("Paris", "Paris.")
    violations = audit(db, trace_id)
    if leak:  # and the released answer never reached history
        assert sorted(violations) == ["ineligible_text_in_destination",
                                      "missing_destination_write"]
    else:
        assert violations == []

    project = f"tracestore-live-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    code, _, err = run("export", "--format", "otlp", "--content", "--endpoint",
                       phoenix + "/v1/traces", db=db)
    assert code == 0, err
    stored = phoenix_spans(phoenix, project, 3)
    assert len(stored) == 3
    roots = [s for s in stored if "tracestore.attempt_id" not in s["attributes"]]
    [root] = roots
    spans = {s["attributes"]["tracestore.attempt_id"]: s for s in stored if s not in roots}

    # The turn: its status is the audit's verdict, its attempts are its children.
    assert root["name"] == f"turn {trace_id}"
    if leak:
        assert (root["status_code"], root["status_message"]) == (
            "ERROR", "violation: " + ", ".join(dict.fromkeys(violations)))
        assert root["attributes"]["tracestore.audit.violations"] == violations
    else:
        assert root["status_code"] == "OK"
    assert root["attributes"]["tracestore.turn.attempt_id"] == new.attempt_id
    assert set(spans) == {old.attempt_id, new.attempt_id}
    for span in spans.values():
        assert span["parent_id"] == root["context"]["span_id"]
        assert span["context"]["trace_id"] == root["context"]["trace_id"]
    assert spans[new.attempt_id]["attributes"]["tracestore.retry_of"] == old.attempt_id
    assert (spans[old.attempt_id]["status_code"], spans[new.attempt_id]["status_code"]) == (
        "UNSET", "OK")

    for seen in (old, new):
        span = spans[seen.attempt_id]
        attrs = span["attributes"]
        # Which model was asked and which answered, and what it was asked: the recorder
        # keeps prompts (record_prompts=True), so with --content the request's messages
        # reach the viewer as the GenAI and OpenInference conventions spell them.
        assert attrs["llm.model_name"] == attrs["gen_ai.response.model"] == "gpt-5-2025-08-07"
        assert attrs["gen_ai.request.model"] == "gpt-5"
        assert json.loads(attrs["llm.invocation_parameters"])["model"] == "gpt-5"
        assert json.loads(attrs["gen_ai.input.messages"]) == INPUT
        assert json.loads(attrs["input.value"]) == INPUT
        assert input_messages(attrs) == [(m["role"], m["content"]) for m in MESSAGES]
        assert attrs["output.value"] == seen.text
        # Real times: the span runs as the recorder saw the attempt run.
        assert attrs["tracestore.timing"] == "recorded"
        start, end = _ns(span["start_time"]), _ns(span["end_time"])
        recorded = recorded_times(db, seen.attempt_id)
        assert end - start > 0
        assert abs((end - start) - (recorded["drain"] - recorded["start"])) <= SLACK_NS
        assert abs(start - recorded["start"]) <= SLACK_NS
        # ... and as the application lived it, on its own clock.
        assert abs((end - start) - (seen.ended - seen.opened)) <= SLACK_NS
        assert abs(end - seen.ended) <= SLACK_NS
        # The first token, where the first text frame was recorded.
        [first] = [e for e in span["events"] if e["name"] == "First Token Stream Event"]
        assert seen.first_text is not None
        assert abs(_ns(first["timestamp"]) - recorded["first_text"]) <= SLACK_NS
        assert abs(_ns(first["timestamp"]) - seen.first_text) <= SLACK_NS
        assert start <= _ns(first["timestamp"]) <= end
    # The retry starts after the stopped attempt ended, and the turn spans both.
    assert _ns(spans[new.attempt_id]["start_time"]) >= _ns(spans[old.attempt_id]["end_time"])
    assert (_ns(root["start_time"]), _ns(root["end_time"])) == (
        _ns(spans[old.attempt_id]["start_time"]), _ns(spans[new.attempt_id]["end_time"]))


def test_without_content_a_recorded_prompt_stays_home(
        tmp_path: Path, phoenix: str,  # noqa: F811 - the fixture
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same turn, its prompt recorded, exported without ``--content``: Phoenix gets the
    model and no input message (a fresh trace: Phoenix keeps the first copy of a span)."""
    db = tmp_path / "bare.db"
    lived = record_turn(db, "live-bare", leak=False)
    assert lived.statuses == ["stopped", "released"]
    project = f"tracestore-bare-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    code, _, err = run("export", "--format", "otlp", "--endpoint", phoenix + "/v1/traces",
                       db=db)
    assert code == 0, err
    stored = phoenix_spans(phoenix, project, 3)
    assert len(stored) == 3
    attempts = [s for s in stored if "tracestore.attempt_id" in s["attributes"]]
    assert {s["attributes"]["gen_ai.request.model"] for s in attempts} == {"gpt-5"}
    for span in stored:
        assert not [k for k in span["attributes"]
                    if k.startswith(("llm.input_messages", "input.", "gen_ai.input"))]
        assert MESSAGES[1]["content"] not in json.dumps(span)
