"""Live recording and ``ingest`` of the same bytes agree where the ending is least ordinary
(issues 18/19): every whole-body JSON error of ``fixtures/wild/http-error`` (compact
one-line bodies with no newline, and pretty-printed ones that NDJSON framing alone would
refuse), every wild stream that ends with ``[DONE]`` and no ``finish_reason``, and a
recognized stream that turns invalid mid-body (bad UTF-8, a CRC mismatch: seed 000 keeps
the valid prefix).  Fed to the recorder whole and in small chunks: the same frames, the
same drain (outcome and detail), the same rejection and the same decision as ``ingest``.
In-process, except the error bodies that are also sent through the official SDKs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.events import CaptureSegment, FrameReceived, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections.release import decide_release
from tracestore.store.log import EventStore

from conftest import FIXTURES

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
pytestmark = pytest.mark.usefixtures("frozen_heap")

WILD = FIXTURES / "wild"
TASK = {"answer_patterns": ["."]}
DONE_ONLY = ["openai-chat/llm__tools_streaming_variant_a.sse",
             "openai-chat/llm__tools_streaming_variant_b.sse",
             "other-compatible/pyd__snowflake_model_streaming.sse",
             "other-compatible/pyd__snowflake_thinking_streaming.sse"]
BODIES = sorted(str(p.relative_to(WILD)) for p in (WILD / "http-error").iterdir()) + DONE_ONLY


def ingested(path: Path):
    plan = plan_ingest(path.read_bytes(), filename=path.name, attempt_id="x", trace_id="x",
                       task=TaskRule.model_validate(TASK))
    frames = [(e.event.index, e.event.native, e.event.kinds, e.event.offset)
              for e in plan.events if isinstance(e.event, FrameReceived)]
    drained = next(e.event for e in plan.events if e.event.type == "transport.drained")
    with EventStore("sqlite://") as store:
        store.append(list(plan.events), blob_data=[plan.blob])
        decision = decide_release(store.read(), "x")
    return plan.api, frames, (drained.outcome, drained.detail), decision


def recorded(rec: Recorder, data: bytes, chunk: int, attempt_id: str):
    attempt = rec.trace(f"t-{attempt_id}", task=TASK).attempt(attempt_id)
    for start in range(0, len(data), chunk):
        attempt.feed(data[start:start + chunk])
    attempt.drain()
    frames, segment, drained = [], None, None
    for stored in rec.store.read(attempt_id=attempt_id):
        event = stored.event
        if isinstance(event, CaptureSegment):
            segment = event
        elif isinstance(event, FrameReceived):
            frames.append((event.index, event.native, event.kinds,
                           segment.offset + event.offset))
        elif event.type == "transport.drained":
            drained = event
    return attempt.api, frames, (drained.outcome, drained.detail), attempt.decision()


def test_the_selection_is_the_corpus_own() -> None:
    assert len(BODIES) == 17 and all((WILD / b).is_file() for b in BODIES)


@pytest.mark.parametrize("body", BODIES)
def test_live_recording_of_the_body_is_what_ingest_says(tmp_path: Path, body: str) -> None:
    data = (WILD / body).read_bytes()
    api, frames, drain, expected = ingested(WILD / body)
    with Recorder("sqlite://") as rec:
        for chunk in (len(data), 7):
            got_api, got_frames, got_drain, got = recorded(rec, data, chunk, f"a{chunk}")
            assert (got_api, got_frames, got_drain) == (api, frames, drain), chunk
            assert (got.status, got.reasons, got.answer) == (
                expected.status, expected.reasons, expected.answer), chunk
    if body.startswith("http-error/"):
        assert (expected.status, expected.reasons) == ("failed", ("native_failure",))
    else:
        assert drain[0] == "eof" and drain[1].startswith("the dialect's end marker [DONE]")


# -- the same error bodies through the official SDKs -------------------------------------------
def _sdk_call(name: str, server, transport) -> None:
    import httpx2 as httpx

    msg = [{"role": "user", "content": "x"}]
    client = httpx.Client(transport=transport)
    if name == "openai":
        import openai

        sdk = openai.OpenAI(api_key="t", base_url=f"{server.url}/v1", max_retries=0,
                            http_client=client)
        for _ in sdk.chat.completions.create(model="m", stream=True, messages=msg):
            pass
    elif name == "anthropic":
        import anthropic

        sdk = anthropic.Anthropic(api_key="t", base_url=server.url, max_retries=0,
                                  http_client=client)
        for _ in sdk.messages.create(model="m", max_tokens=9, stream=True, messages=msg):
            pass
    else:
        from google import genai
        from google.genai import types

        sdk = genai.Client(api_key="t", http_options=types.HttpOptions(
            base_url=server.url, httpx_client=client))
        for _ in sdk.models.generate_content_stream(model="gemini-2.0-flash", contents="x"):
            pass


SDK_ERRORS = [
    ("openai", "/v1/chat/completions", 401,
     "mira__authentication_error_stream-openai_gpt_4o_completions.json", "AuthenticationError"),
    ("openai", "/v1/chat/completions", 401, "ddt__completion_stream_wrong_api_key.json",
     "AuthenticationError"),
    ("anthropic", "/v1/messages", 401,
     "mira__authentication_error_stream-anthropic_claude_sonnet_4_0.json",
     "AuthenticationError"),
    ("gemini", "gemini-2.0-flash:streamGenerateContent", 404,
     "mira__model_not_found_stream-google_gemini_2_5_flash.json", "ClientError"),
]


@pytest.mark.parametrize(("sdk", "route", "status", "body", "raised"), SDK_ERRORS,
                         ids=[f"{s}-{b.split('__')[0]}" for s, _, _, b, _ in SDK_ERRORS])
def test_a_streamed_request_refused_with_a_json_error_body_is_recorded_as_ingest_says(
        sdk: str, route: str, status: int, body: str, raised: str) -> None:
    """The provider refuses a ``stream: true`` request with one JSON error body (4xx): the
    SDK raises its own error, unchanged, and the attempt is recorded ``failed`` with the
    frames and drain ``ingest`` of the body gives — not left out of the trace."""
    from capture_server import CaptureServer, route_for
    from tracestore.recording.httpx_capture import RecordingTransport

    path = WILD / "http-error" / body
    api, frames, drain, expected = ingested(path)
    with CaptureServer() as server, Recorder("sqlite://") as rec:
        server.routes[route] = route_for(path, status=status)
        transport = RecordingTransport(rec.trace("t", task=TASK))
        with pytest.raises(Exception) as caught:  # noqa: B017 - the SDK's own error class
            _sdk_call(sdk, server, transport)
        assert type(caught.value).__name__ == raised
        transport.flush()
        assert transport.failures == []
        (attempt,) = transport.attempts
        got = attempt.decision()
        assert (got.status, got.reasons) == (expected.status, expected.reasons) == (
            "failed", ("native_failure",))
        live = [(e.event.index, e.event.native, e.event.kinds) for e in
                rec.store.read(attempt_id=attempt.attempt_id) if isinstance(e.event, FrameReceived)]
        assert (attempt.api, live) == (api, [f[:3] for f in frames])
        (drained,) = [e.event for e in rec.store.read(attempt_id=attempt.attempt_id)
                      if e.type == "transport.drained"]
        assert (drained.outcome, drained.detail) == drain


# -- a recognized stream that turns invalid mid-body ---------------------------------------------
REAL = FIXTURES / "real"


def _bad_utf8() -> bytes:
    data = (REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse").read_bytes()
    good = b"\n\n".join(data.split(b"\n\n")[:3]) + b"\n\n"
    return good + b"data: \xff\xfe\n\n" + data[len(good):]


def _bad_crc() -> bytes:
    data = bytearray((REAL / "bedrock" / "nova-micro-text.bin").read_bytes())
    data[300] ^= 0xFF  # inside the third message: its CRC no longer holds
    return bytes(data)


def _kept(events) -> list[tuple]:
    return [(e.type, e.event.index, getattr(e.event, "code", None),
             getattr(e.event, "offset", None) if e.type == "frame.rejected" else None,
             getattr(e.event, "detail", None) if e.type != "frame.received" else None)
            for e in events if e.type in ("frame.received", "frame.rejected")] + [
        (e.type, e.event.outcome, e.event.detail) for e in events
        if e.type == "transport.drained"]


@pytest.mark.parametrize(("name", "data", "code"), [
    ("x.sse", _bad_utf8(), "invalid_utf8"), ("x.bin", _bad_crc(), "message_crc_mismatch")],
    ids=["sse-bad-utf8", "eventstream-bad-crc"])
def test_a_stream_turning_invalid_keeps_its_prefix_live_as_ingest_does(
        name: str, data: bytes, code: str) -> None:
    plan = plan_ingest(data, filename=name, attempt_id="x", trace_id="x",
                       task=TaskRule.model_validate(TASK))
    with EventStore("sqlite://") as store:
        store.append(list(plan.events), blob_data=[plan.blob])
        expected_events, expected = _kept(store.read()), decide_release(store.read(), "x")
    assert (expected.status, expected.reasons) == ("held", (code,))
    assert [e[0] for e in expected_events].count("frame.rejected") == 1
    for chunk in (len(data), 5):
        with Recorder("sqlite://") as rec:
            attempt = rec.trace("t", task=TASK).attempt("x")
            for start in range(0, len(data), chunk):
                attempt.feed(data[start:start + chunk])  # never raises: the prefix is kept
            attempt.drain()
            assert _kept(rec.store.read(attempt_id="x")) == expected_events, chunk
            got = attempt.decision()
            assert (got.status, got.reasons) == (expected.status, expected.reasons)
            segments = [e.event for e in rec.store.read(attempt_id="x")
                        if e.type == "capture.segment"]
            assert sum(s.size for s in segments) == len(data)  # every byte kept, unread
            assert rec.store.verify().ok


def test_invalid_bytes_before_any_frame_are_still_refused_live() -> None:
    from tracestore.errors import WireError

    with Recorder("sqlite://") as rec:
        attempt = rec.trace("t", task=TASK).attempt("x", api="openai-chat")
        with pytest.raises(WireError) as caught:
            attempt.feed(b'data: {"x": "\xff"}\n\n')
        assert caught.value.code == "invalid_utf8"
        assert [e.type for e in rec.store.read(attempt_id="x")] == ["attempt.started"]


# -- seed 000's application frames, live as ingest judges them ---------------------------------
SEED000 = FIXTURES / "seed000"


def _seed000_cases() -> list[tuple[str, bytes]]:
    good = (SEED000 / "replace-file.ndjson").read_bytes()
    cases = [(p.stem, p.read_bytes()) for p in sorted(SEED000.glob("*.ndjson"))]
    return cases + [("no-final-newline", good.rstrip(b"\n")),  # the done frame unterminated
                    ("inside-the-done-frame", good[:-20])]


@pytest.mark.parametrize(("case", "data"), _seed000_cases(),
                         ids=[c for c, _ in _seed000_cases()])
def test_application_frames_are_judged_live_as_ingest_judges_them(case: str, data: bytes) -> None:
    """Seed 000's rules hold live: a frame that is not strict JSON keeps the frames before
    it (``invalid_frame_json``), only a complete line is a frame (an unterminated ``done``
    line is a ``truncated_frame``: no accepted answer), whatever the transport chunking."""
    import json

    from tracestore.ingest import Bindings

    from test_contracts_seed000 import CONTRACT, binding

    source = json.loads((FIXTURES / "contracts" / "seed000-rag.json").read_text())
    plan = plan_ingest(data, filename="x.ndjson", attempt_id="x", trace_id="x",
                       bindings=Bindings(CONTRACT, binding("replace-file")))
    with EventStore("sqlite://") as store:
        store.append(list(plan.events), blob_data=[plan.blob])
        expected_events, expected = _kept(store.read()), decide_release(store.read(), "x")
    for chunk in (len(data), 11):
        with Recorder("sqlite://") as rec:
            trace = rec.trace("t", contract=source, binding=binding("replace-file"))
            attempt = trace.attempt("x", api="app-frames")
            for start in range(0, len(data), chunk):
                attempt.feed(data[start:start + chunk])
            attempt.drain()
            assert _kept(rec.store.read(attempt_id="x")) == expected_events, chunk
            got = attempt.decision()
            assert (got.status, got.reasons) == (expected.status, expected.reasons), chunk
    if case in ("no-final-newline", "inside-the-done-frame"):
        assert (expected.status, expected.reasons) == ("held", ("truncated_frame",))
    if case == "malformed-frame-4":
        assert (expected.status, expected.reasons) == ("held", ("invalid_frame_json",))


# -- a sample of the whole wild corpus, live as ingest -----------------------------------------
#: Every 20th body of fixtures/wild (the whole corpus agreed when this was written: 1,014 of
#: 1,014 at 64-byte chunks, ~1 min; the sample keeps the suite's budget).
WILD_SAMPLE = sorted(str(p.relative_to(WILD)) for p in WILD.rglob("*")
                     if p.is_file() and p.name not in ("PROVENANCE.md", "index.jsonl"))[::20]


def _outcome(events) -> tuple:
    out, segment = [], None
    for stored in events:
        event = stored.event
        if isinstance(event, CaptureSegment):
            segment = event
        elif isinstance(event, FrameReceived):
            out.append((event.index, event.native, event.kinds, segment.offset + event.offset
                        if segment is not None and segment.sha256 == event.capture_sha256
                        else event.offset))
    return tuple(out), tuple(_kept(events)[len(out):])


def test_a_sample_of_the_wild_corpus_is_recorded_live_as_ingest_says() -> None:
    from tracestore.errors import TracestoreError

    assert len(WILD_SAMPLE) >= 50
    disagree = []
    with Recorder("sqlite://") as rec:
        for n, body in enumerate(WILD_SAMPLE):
            data = (WILD / body).read_bytes()
            try:
                plan = plan_ingest(data, filename=Path(body).name, attempt_id="x",
                                   trace_id="x", task=TaskRule.model_validate(TASK))
                with EventStore("sqlite://") as store:
                    store.append(list(plan.events), blob_data=[plan.blob])
                    d = decide_release(store.read(), "x")
                    expected: tuple = (d.status, d.reasons, _outcome(store.read()))
            except TracestoreError as exc:
                expected = ("refused", exc.code)
            try:
                attempt = rec.trace(f"t{n}", task=TASK).attempt(f"a{n}")
                for start in range(0, len(data), 64):
                    attempt.feed(data[start:start + 64])
                attempt.drain()
                d = attempt.decision()
                got: tuple = (d.status, d.reasons, _outcome(rec.store.read(attempt_id=f"a{n}")))
            except TracestoreError as exc:
                got = ("refused", exc.code)
            if got != expected:
                disagree.append((body, expected[:2], got[:2]))
    assert disagree == []


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_an_sdk_retrying_a_refused_stream_records_only_the_response_it_read(sdk: str) -> None:
    """A 429 is retried by the SDK, which closes the error response unread and asks again:
    nothing of those reached the application and nothing is recorded (no made-up Stop);
    the last one, whose body the SDK read to raise its error, is the ``failed`` attempt."""
    import httpx2

    from capture_server import CaptureServer, route_for
    from tracestore.recording.httpx_capture import RecordingTransport
    from tracestore.recording.turn import current_turn

    body = WILD / "http-error" / ("mira__authentication_error_stream-openai_gpt_4o_completions"
                                  ".json" if sdk == "openai" else
                                  "mira__authentication_error_stream-anthropic_claude_sonnet"
                                  "_4_0.json")
    route = "/v1/chat/completions" if sdk == "openai" else "/v1/messages"
    with CaptureServer() as server, Recorder("sqlite://") as rec:
        server.routes[route] = route_for(body, status=429, headers={"retry-after-ms": "1"})
        transport = RecordingTransport()
        msg = [{"role": "user", "content": "x"}]
        with rec.turn("t", task=TASK) as turn:
            with pytest.raises(Exception) as caught:  # noqa: B017 - the SDK's own error
                if sdk == "openai":
                    import openai

                    client = openai.OpenAI(api_key="t", base_url=f"{server.url}/v1",
                                           max_retries=2,
                                           http_client=httpx2.Client(transport=transport))
                    client.chat.completions.create(model="m", stream=True, messages=msg)
                else:
                    import anthropic

                    client = anthropic.Anthropic(api_key="t", base_url=server.url,
                                                 max_retries=2,
                                                 http_client=httpx2.Client(transport=transport))
                    client.messages.create(model="m", max_tokens=9, stream=True, messages=msg)
            assert current_turn() is turn
        assert type(caught.value).__name__ == "RateLimitError"
        assert len([r for r in server.requests if r[0] == route]) == 3
        transport.flush()
        (attempt,) = transport.attempts
        assert [h.attempt_id for h in turn.attempts] == [attempt.attempt_id]
        got = attempt.decision()
        assert (got.status, got.reasons) == ("failed", ("native_failure",))
        types = [e.type for e in rec.store.read(trace_id="t")]
        assert types.count("attempt.started") == 1 and "local.stopped" not in types
