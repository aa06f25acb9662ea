"""Secrets are never stored, wherever the application sends them.

Distinct secrets are planted in every position a request can carry one -- a JSON body
field at the top level and nested (names in any case), a key-shaped value in another field,
headers (``Authorization``, ``x-api-key``, a key in the User-Agent), the query string
(``?key=``) -- and sent through the recording proxy, the SDK recorder (writer thread and
writer process) and the recorder's own API.  Then the whole database file, its WAL, and
every spill or journal file the writers left are read as bytes: no planted secret occurs in
them, and the redaction marker does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.text.redaction import (
    REDACTED, SECRET_FIELDS_ENV, redact, redact_body, redact_text, secret_fields,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_server import CaptureServer  # noqa: E402
from capture_server import route_for as capture_route  # noqa: E402
from proxy_upstream import route_for  # noqa: E402
from proxyhelp import RESPONSES, running, wait_for_drain  # noqa: E402

#: One distinct secret per position; none is a substring of another.
BODY_TOP = "bodytop-c2VjcmV0LXRvcA"
BODY_NESTED = "bodynested-bmVzdGVkLXNlY3JldA"
BODY_UPPER = "bodyupper-VVBQRVItc2VjcmV0"
BODY_SHAPED = "sk-proj-" + "Q1" * 12
HEADER_AUTH = "sk-" + "H7" * 12
HEADER_KEY = "headerkey-aGVhZGVyLWtleQ"
AGENT_KEY = "sk-ant-api03-" + "Ag" * 10
QUERY_KEY = "querykey-cXVlcnkta2V5"
SECRETS = [BODY_TOP, BODY_NESTED, BODY_UPPER, BODY_SHAPED, HEADER_AUTH, HEADER_KEY, AGENT_KEY,
           QUERY_KEY]

BODY = {"model": "gpt-4o", "stream": True, "input": "hello", "api_key": BODY_TOP,
        "temperature": 0.2, "user": BODY_SHAPED,
        "extra_body": {"auth": {"Access_Token": BODY_NESTED, "region": "eu"},
                       "list": [{"PASSWORD": BODY_UPPER}]}}
HEADERS = {"Authorization": f"Bearer {HEADER_AUTH}", "x-api-key": HEADER_KEY,
           "User-Agent": f"app/1.0 (debug key {AGENT_KEY})"}


def _stored_bytes(*places: Path) -> bytes:
    """Every file at or under ``places`` (a database and its -wal/-journal beside it)."""
    data = b""
    for place in places:
        files = [place] if place.is_file() else sorted(place.rglob("*")) if place.is_dir() \
            else []
        files += [place.with_name(place.name + s) for s in ("-wal", "-journal")]
        data += b"".join(f.read_bytes() for f in files if f.is_file())
    return data


def _assert_clean(data: bytes) -> None:
    assert data, "nothing was read"
    for secret in SECRETS:
        assert secret.encode() not in data, secret
    assert REDACTED.encode() in data


# -- the pure function --------------------------------------------------------------------

def test_redact_replaces_every_credential_and_changes_nothing_else() -> None:
    original = json.loads(json.dumps(BODY))
    cleaned = redact(BODY)
    assert original == BODY  # data in, data out: the input is untouched
    assert cleaned == {
        "model": "gpt-4o", "stream": True, "input": "hello", "api_key": REDACTED,
        "temperature": 0.2, "user": REDACTED,
        "extra_body": {"auth": {"Access_Token": REDACTED, "region": "eu"},
                       "list": [{"PASSWORD": REDACTED}]}}
    assert redact(cleaned) == cleaned  # idempotent
    assert redact({"Key": None, "max_tokens": 5, "tokens": 3}) == \
        {"Key": None, "max_tokens": 5, "tokens": 3}


@pytest.mark.parametrize("text, expected", [
    (f"Bearer {HEADER_AUTH}", f"Bearer {REDACTED}"),
    (f"key {AGENT_KEY}.", f"key {REDACTED}."),
    ("id AKIAIOSFODNN7EXAMPLE here", f"id {REDACTED} here"),
    ("AIza" + "x" * 35, REDACTED),
    ("xai-" + "k" * 30, REDACTED),
    (f"https://h/v1/m:streamGenerateContent?alt=sse&key={QUERY_KEY}&x=1",
     f"https://h/v1/m:streamGenerateContent?alt=sse&key={REDACTED}&x=1"),
    (f"GET /p?api-key={QUERY_KEY}", f"GET /p?api-key={REDACTED}"),
    ("a task-list and max_tokens=5, monkey=1", "a task-list and max_tokens=5, monkey=1"),
])
def test_redact_text_replaces_key_shapes_and_credential_query_parameters(
        text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_the_names_are_extended_by_the_recorder_and_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_FIELDS_ENV, "Org-Pin, ")
    fields = secret_fields(["session-id"])
    assert {"org_pin", "session_id", "api_key"} <= fields
    assert redact({"org_pin": "1", "Session_Id": "2", "model": "m"}, fields) == \
        {"org_pin": REDACTED, "Session_Id": REDACTED, "model": "m"}


def test_redact_body_keeps_a_clean_body_as_it_is() -> None:
    clean = b'{"model":"m","max_tokens":5,"stream":true}'
    assert redact_body(clean) is clean
    assert json.loads(redact_body(json.dumps(BODY).encode())) == redact(BODY)
    assert redact_body(b"api_key=" + BODY_TOP.encode()) == b""  # not JSON: no settings


# -- the proxy ----------------------------------------------------------------------------

def test_the_proxy_stores_no_secret(tmp_path: Path) -> None:
    import httpx

    spill = tmp_path / "spill"
    spill.mkdir()
    with running(tmp_path, max_backlog=1, spill_dir=str(spill)) as setup:
        setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=37)
        with httpx.Client() as client, client.stream(
                "POST", f"{setup.url}/v1/responses?key={QUERY_KEY}", json=BODY,
                headers=HEADERS) as response:
            assert response.status_code == 200
            b"".join(response.iter_raw())
            attempt = response.headers["x-tracestore-attempt"]
        events = wait_for_drain(setup, attempt)
        _, _, sent, body = setup.upstream.requests[-1]
        assert json.loads(body)["api_key"] == BODY_TOP  # forwarded as sent, never stored
        started = events[0].event
        assert started.request["api_key"] == REDACTED
        assert started.request["client"] == f"app/1.0 (debug key {REDACTED})"
        setup.rec.store.close()
    _assert_clean(_stored_bytes(setup.db, spill))


# -- the recorder -------------------------------------------------------------------------

@pytest.mark.parametrize("writer", ["thread", "process"])
def test_the_sdk_recorder_stores_no_secret(tmp_path: Path, writer: str) -> None:
    import httpx2

    from tracestore.recording.httpx_capture import RecordingTransport

    db = tmp_path / "r.db"
    journals: bytes = b""
    with CaptureServer() as server, Recorder(f"sqlite:///{db}") as rec:
        server.routes["/v1/responses"] = capture_route(RESPONSES, chunk=64)
        transport = RecordingTransport(rec.trace("q"), http=httpx2, writer=writer)
        client = httpx2.Client(transport=transport, timeout=30)  # closed after the flush
        with client.stream("POST", f"{server.url}/v1/responses?key={QUERY_KEY}", json=BODY,
                           headers=HEADERS) as response:
            b"".join(response.iter_bytes())
        transport.flush()
        assert transport.failures == []
        if writer == "process":  # the journal the child reads, as it stands
            journals = _stored_bytes(Path(transport.process._dir))
            assert journals
        (attempt,) = transport.attempts
        started = rec.store.read(attempt_id=attempt.attempt_id)[0].event
        assert started.request["extra_body"]["auth"]["Access_Token"] == REDACTED
        client.close()
    _assert_clean(_stored_bytes(db))
    for secret in SECRETS:
        assert secret.encode() not in journals, secret


def test_the_recorder_api_redacts_settings_and_drain_details(tmp_path: Path) -> None:
    db = tmp_path / "api.db"
    with Recorder(f"sqlite:///{db}", secret_fields=["X-Org-Secret"]) as rec:
        attempt = rec.trace("t").attempt(
            "a1", api="openai-responses",
            request={**BODY, "headers": HEADERS, "x_org_secret": "org-c2VjcmV0LW9yZw"})
        attempt.feed(b"data: {\"type\": \"response.created\"}\n\n")
        attempt.drain("error", f"ConnectError: https://h/v1?key={QUERY_KEY} refused")
        events = rec.store.read(attempt_id="a1")
        assert events[0].event.request["headers"] == {
            "Authorization": REDACTED, "x-api-key": REDACTED,
            "User-Agent": f"app/1.0 (debug key {REDACTED})"}
        (drained,) = [e.event for e in events if e.type == "transport.drained"]
        assert drained.detail == f"ConnectError: https://h/v1?key={REDACTED} refused"
    data = _stored_bytes(db)
    _assert_clean(data)
    assert b"org-c2VjcmV0LW9yZw" not in data


def test_a_replayed_scenario_stores_its_request_redacted() -> None:
    from tracestore.ingest.replay import parse_scenario, preview_replay

    opened = {"open": "r", "attempt": "a", "api": "bedrock-converse-stream",
              "request": {"modelId": "nova", "api_key": BODY_TOP,
                          "auth": {"Token": BODY_NESTED}}}
    events, _ = preview_replay(parse_scenario({"trace": "tr", "steps": [opened]}))
    (started,) = [e.event for e in events if e.event.type == "attempt.started"]
    assert started.request == {"modelId": "nova", "api_key": REDACTED,
                               "auth": {"Token": REDACTED}}


def test_a_broken_transport_message_is_redacted_before_the_journal(tmp_path: Path) -> None:
    from tracestore.recording.body import BodyAttempt, BodyRecording
    from tracestore.recording.process import ProcessWriter

    db = tmp_path / "j.db"
    capture = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "anthropic" / \
        "text-basic.sse"
    with Recorder(f"sqlite:///{db}") as rec:
        owner = BodyRecording(rec.trace("q"), ())
        owner.process = ProcessWriter(owner)
        attempt = owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
        attempt.received(capture.read_bytes()[:200])
        attempt.broke(OSError(f"POST https://h/v1/messages?key={QUERY_KEY} was reset"))
        owner.flush()
        journal = _stored_bytes(Path(owner.process._dir))
        owner.stop_writer()
        (drained,) = [e.event for e in rec.store.read(trace_id="q")
                      if e.type == "transport.drained"]
    assert QUERY_KEY.encode() not in journal and REDACTED.encode() in journal
    assert drained.detail == f"OSError: POST https://h/v1/messages?key={REDACTED} was reset"
    assert QUERY_KEY.encode() not in _stored_bytes(db)
