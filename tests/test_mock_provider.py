"""``tracestore mock``: the official SDKs, given its base URL, read real captured streams
from it; a recorded request is matched exactly; scripted faults happen as scripted; a bad
scenario is refused before anything serves."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tracestore.errors import InputError
from tracestore.mock import RunningMock, mock_app

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
# Captures: see fixtures/real/PROVENANCE.md.
CHAT = REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse"
ANTHROPIC = REAL / "anthropic" / "text-basic.sse"
RESPONSES = REAL / "openai-responses" / "text-gpt-4o.sse"
QUESTION = [{"role": "user", "content": "Capital of France?"}]


def scenario(tmp_path: Path, *exchanges: dict) -> Path:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"exchanges": list(exchanges)}))
    return path


def _chat_text(base: str, **request: object) -> str:
    import openai

    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
    stream = client.chat.completions.create(model="gpt-5", stream=True, messages=QUESTION,
                                            **request)  # type: ignore[call-overload]
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def _capture_text(path: Path) -> str:
    from tracestore.ingest.pipeline import IngestOptions, ingest_input
    from tracestore.projections import decide_release
    from tracestore.store.log import EventStore

    with EventStore("sqlite://") as store:
        ingest_input(store, path.read_bytes(), IngestOptions(
            filename=path.name, attempt_id="x", trace_id="x",
            task={"answer_patterns": ["."]}))  # type: ignore[arg-type]
        return decide_release(store.read(), "x").answer or ""


def test_the_openai_sdk_reads_a_captured_chat_stream(tmp_path: Path) -> None:
    path = scenario(tmp_path, {"path": "/v1/chat/completions", "capture": str(CHAT)})
    with RunningMock(path) as mock:
        text = _chat_text(mock.url)
        assert mock.log[0]["completed"] is True and mock.log[0]["sent"] == CHAT.stat().st_size
    assert text and text == _capture_text(CHAT)


def test_the_anthropic_sdk_reads_a_captured_messages_stream(tmp_path: Path) -> None:
    import anthropic

    path = scenario(tmp_path, {"path": "/v1/messages", "capture": str(ANTHROPIC)})
    with RunningMock(path) as mock:
        client = anthropic.Anthropic(base_url=mock.url, api_key="sk-ant-test", max_retries=0)
        with client.messages.stream(model="claude-3-5-haiku-latest", max_tokens=64,
                                    messages=QUESTION) as stream:
            text = "".join(stream.text_stream)
    assert text and text == _capture_text(ANTHROPIC)


def test_a_recorded_request_is_matched_exactly(tmp_path: Path) -> None:
    import openai

    recorded = {"model": "gpt-5", "stream": True, "messages": QUESTION}
    path = scenario(tmp_path, {"path": "/v1/chat/completions", "capture": str(CHAT),
                               "request": recorded})
    with RunningMock(path) as mock:
        with pytest.raises(openai.BadRequestError) as changed:
            _chat_text(mock.url, temperature=0.2)  # one parameter more than recorded
        assert changed.value.code == "replay_request_mismatch"
        assert "temperature (not in the recording)" in str(changed.value)
        assert _chat_text(mock.url) == _capture_text(CHAT)  # the recorded body: played
        with pytest.raises(openai.APIStatusError) as again:
            _chat_text(mock.url)
        assert again.value.status_code == 409 and again.value.code == "replay_exhausted"
    assert [e.get("error") for e in mock.log] == ["replay_request_mismatch", None,
                                                  "replay_exhausted"]


def test_a_changed_question_names_the_first_differing_field(tmp_path: Path) -> None:
    recorded = {"model": "gpt-5", "stream": True, "messages": QUESTION}
    path = scenario(tmp_path, {"path": "/v1/chat/completions", "capture": str(CHAT),
                               "request": recorded})
    with RunningMock(path) as mock:
        asked = {**recorded, "messages": [{"role": "user", "content": "Capital of Spain?"}]}
        answer = httpx.post(f"{mock.url}/v1/chat/completions", json=asked, timeout=30)
    assert answer.status_code == 400
    assert answer.json() == {"error": {
        "message": "the request differs from the recorded one at messages[0].content",
        "type": "invalid_request_error", "code": "replay_request_mismatch", "param": None}}


def test_ignored_fields_are_named_in_the_scenario_never_by_default(tmp_path: Path) -> None:
    recorded = {"model": "gpt-5", "stream": True, "messages": QUESTION, "user": "u-1"}
    path = scenario(tmp_path, {"path": "/v1/chat/completions", "capture": str(CHAT),
                               "request": recorded, "ignore_fields": ["user"]})
    with RunningMock(path) as mock:
        asked = {**recorded, "user": "u-2"}
        assert httpx.post(f"{mock.url}/v1/chat/completions", json=asked,
                          timeout=30).status_code == 200


def test_a_scripted_429_reaches_the_sdk_with_its_retry_after(tmp_path: Path) -> None:
    import openai

    path = scenario(tmp_path, {"path": "/v1/chat/completions", "capture": str(CHAT),
                               "faults": {"status": 429, "retry_after": 7}})
    with RunningMock(path) as mock:
        with pytest.raises(openai.RateLimitError) as limited:
            _chat_text(mock.url)
    assert limited.value.response.headers["retry-after"] == "7"
    assert mock.log[0]["status"] == 429 and mock.log[0]["sent"] == 0


def test_a_cut_at_a_byte_breaks_the_transport_there(tmp_path: Path) -> None:
    path = scenario(tmp_path, {"path": "/v1/responses", "capture": str(RESPONSES),
                               "faults": {"cut_at_byte": 1000, "chunk_bytes": 100}})
    with RunningMock(path) as mock:
        got = bytearray()
        with pytest.raises(httpx.TransportError):
            with httpx.stream("POST", f"{mock.url}/v1/responses", json={"stream": True},
                              timeout=30) as response:
                for chunk in response.iter_raw():
                    got += chunk
    assert bytes(got) == RESPONSES.read_bytes()[:1000]
    assert mock.log[0]["sent"] == 1000 and mock.log[0]["completed"] is False


@pytest.mark.parametrize("keep_sending", [False, True])
def test_the_server_records_the_byte_at_which_the_client_left(tmp_path: Path,
                                                              keep_sending: bool) -> None:
    path = scenario(tmp_path, {"path": "/v1/responses", "capture": str(RESPONSES),
                               "faults": {"chunk_bytes": 200, "delay_ms": 20,
                                          "keep_sending_after_disconnect": keep_sending}})
    with RunningMock(path) as mock:
        with httpx.stream("POST", f"{mock.url}/v1/responses", json={"stream": True},
                          timeout=30) as response:
            first = next(response.iter_raw())
        assert first
        import time

        for _ in range(300):  # the server notices the disconnect at its next write
            if mock.log[0]["client_left_at"] is not None and (
                    not keep_sending or mock.log[0]["completed"]):
                break
            time.sleep(0.02)
        entry = dict(mock.log[0])
        served = httpx.get(f"{mock.url}/.tracestore/mock/log", timeout=30).json()
    left = entry["client_left_at"]
    assert left is not None and 0 < left < RESPONSES.stat().st_size
    assert entry["completed"] is keep_sending  # the rest produced (T7's shape) or dropped
    assert entry["sent"] <= left + 200
    assert served["requests"][0]["client_left_at"] == left


@pytest.mark.parametrize(("exchange", "code"), [
    ({"path": "/v1/responses"}, "invalid_mock_scenario"),
    ({"path": "/v1/responses", "capture": "nowhere.sse"}, "file_not_found"),
    ({"path": "/v1/responses", "capture": str(RESPONSES),
      "faults": {"cut_at_byte": 10**9}}, "mock_fault_out_of_range"),
    ({"path": "/v1/responses", "capture": str(RESPONSES), "faults": {"status": 200}},
     "invalid_mock_scenario"),
])
def test_a_bad_scenario_is_refused_before_serving(tmp_path: Path, exchange: dict,
                                                  code: str) -> None:
    with pytest.raises(InputError) as refused:
        mock_app(scenario(tmp_path, exchange))
    assert refused.value.code == code


def test_the_command_serves_until_sigterm(tmp_path: Path) -> None:
    path = scenario(tmp_path, {"path": "/v1/chat/completions", "capture": str(CHAT)})
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "tracestore", "mock", str(path),
                             "--listen", f"127.0.0.1:{port}"], stderr=subprocess.PIPE,
                            text=True, env={**os.environ})
    try:
        assert proc.stderr is not None
        assert f"listening on http://127.0.0.1:{port}" in proc.stderr.readline()
        assert _chat_text(f"http://127.0.0.1:{port}") == _capture_text(CHAT)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    bad = subprocess.run([sys.executable, "-m", "tracestore", "mock",
                          str(scenario(tmp_path, {"path": "/x"}))],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error[invalid_mock_scenario]:")


# gemini/sse-text.sse and bedrock/nova-micro-text.bin: see fixtures/real/PROVENANCE.md
GEMINI = REAL / "gemini" / "sse-text.sse"
NOVA = REAL / "bedrock" / "nova-micro-text.bin"


def test_the_gemini_sdk_reads_a_captured_stream(tmp_path: Path) -> None:
    from google import genai
    from google.genai import types

    path = scenario(tmp_path, {"path": "/models/gemini-2.0-flash:streamGenerateContent",
                               "capture": str(GEMINI)})
    with RunningMock(path) as mock:
        client = genai.Client(api_key="test", http_options=types.HttpOptions(
            base_url=mock.url))
        text = "".join(chunk.text or "" for chunk in client.models.generate_content_stream(
            model="gemini-2.0-flash", contents="Capital of France?"))
    assert text and text == _capture_text(GEMINI)


def test_boto3_reads_a_captured_bedrock_event_stream(tmp_path: Path) -> None:
    import boto3

    path = scenario(tmp_path, {"path": "/converse-stream", "capture": str(NOVA)})
    with RunningMock(path) as mock:
        client = boto3.client("bedrock-runtime", region_name="us-east-1",
                              endpoint_url=mock.url, aws_access_key_id="test",
                              aws_secret_access_key="test")
        response = client.converse_stream(
            modelId="amazon.nova-micro-v1:0",
            messages=[{"role": "user", "content": [{"text": "Capital of France?"}]}])
        text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in response["stream"]
                       if "contentBlockDelta" in e)
    assert text and text == _capture_text(NOVA)


def test_a_capture_whose_api_cannot_be_told_is_refused(tmp_path: Path) -> None:
    unknown = tmp_path / "unknown.sse"
    unknown.write_bytes(b'data: {"hello": "world"}\n\n')
    with pytest.raises(InputError) as refused:
        mock_app(scenario(tmp_path, {"path": "/v1/chat/completions",
                                     "capture": str(unknown)}))
    assert refused.value.code == "unknown_provider"
    assert refused.value.message.startswith(f"exchange 0: {unknown} cannot be played: ")


@pytest.mark.parametrize(("path", "capture", "content_type"), [
    # ollama/generate-granite-text.ndjson: see fixtures/real/PROVENANCE.md
    ("/api/generate", REAL / "ollama" / "generate-granite-text.ndjson", "application/x-ndjson"),
    # seed 000's application frames (fixtures/seed000/README.md)
    ("/answer", REAL.parent / "seed000" / "replace-file.ndjson", "application/x-ndjson"),
])
def test_ndjson_apis_are_served_byte_for_byte(tmp_path: Path, path: str, capture: Path,
                                             content_type: str) -> None:
    with RunningMock(scenario(tmp_path, {"path": path, "capture": str(capture)})) as mock:
        with httpx.stream("POST", f"{mock.url}{path}", json={"stream": True},
                          timeout=30) as response:
            body = b"".join(response.iter_raw())
            assert response.headers["content-type"] == content_type
    assert body == capture.read_bytes()


def test_a_folder_of_captures_is_a_scenario(tmp_path: Path) -> None:
    import shutil

    import anthropic

    folder = tmp_path / "captures"
    folder.mkdir()
    shutil.copy(CHAT, folder / "a-chat.sse")
    shutil.copy(ANTHROPIC, folder / "b-anthropic.sse")
    (folder / "README.md").write_text("not a capture: left alone")
    with RunningMock(folder) as mock:
        assert _chat_text(mock.url) == _capture_text(CHAT)
        client = anthropic.Anthropic(base_url=mock.url, api_key="sk-ant-test", max_retries=0)
        with client.messages.stream(model="claude-3-5-haiku-latest", max_tokens=64,
                                    messages=QUESTION) as stream:
            assert "".join(stream.text_stream) == _capture_text(ANTHROPIC)
    assert [e["path"] for e in mock.log] == ["/v1/chat/completions", "/v1/messages"]
    (folder / "c-noise.sse").write_bytes(b'data: {"hello": "world"}\n\n')
    with pytest.raises(InputError) as refused:
        mock_app(folder)
    assert refused.value.code == "unknown_provider"
