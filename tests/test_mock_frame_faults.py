"""Frame-level mock faults: the provider's own in-stream error, another ending, an event
kind the API does not define, a second text block, a tool-call delta -- read through the
official SDKs as they read the provider, and judged by ``tracestore ingest`` of the served
bytes as the fault means."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from clihelp import run, runner

from tracestore.cli import app
from tracestore.errors import InputError
from tracestore.mock import RunningMock, mock_app
from tracestore.mock.frame_faults import FrameFaults, rewrite
from tracestore.mock.scenario import wire_frames

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
# Captures: see fixtures/real/PROVENANCE.md.
CHAT = REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse"
MESSAGES = REAL / "anthropic" / "text-basic.sse"
RESPONSES = REAL / "openai-responses" / "text-gpt-4o.sse"
PATHS = {CHAT: "/v1/chat/completions", MESSAGES: "/v1/messages", RESPONSES: "/v1/responses"}
APIS = {CHAT: "openai-chat", MESSAGES: "anthropic-messages", RESPONSES: "openai-responses"}
QUESTION = [{"role": "user", "content": "Capital of France?"}]


def scenario(tmp_path: Path, capture: Path, **faults: Any) -> Path:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"exchanges": [
        {"path": PATHS[capture], "capture": str(capture), "faults": faults}]}))
    return path


class FaultSequence:
    """One mock serving one exchange per fault set, in the order a test asks for them (the
    mock plays the first unused exchange of a path): one server for all of an SDK test's
    faults rather than one each.  ``url(**faults)`` checks the faults are the next ones."""

    def __init__(self, tmp_path: Path, capture: Path, faults: list[dict[str, Any]]) -> None:
        path = tmp_path / "scenario.json"
        path.write_text(json.dumps({"exchanges": [
            {"path": PATHS[capture], "capture": str(capture), "faults": f} for f in faults]}))
        self.planned, self.asked = faults, 0
        self.mock = RunningMock(path)

    def __enter__(self) -> FaultSequence:
        self.mock.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.mock.__exit__(*exc)

    def url(self, **faults: Any) -> str:
        assert faults == self.planned[self.asked]
        self.asked += 1
        return self.mock.url

    def played(self) -> list[int]:
        """The exchanges the mock played, in order."""
        return [entry["exchange"] for entry in self.mock.log]


def served(tmp_path: Path, capture: Path, **faults: Any) -> bytes:
    with RunningMock(scenario(tmp_path, capture, **faults)) as mock:
        answer = httpx.post(f"{mock.url}{PATHS[capture]}", json={"stream": True}, timeout=30)
    assert answer.status_code == 200
    return answer.content


def release_of(tmp_path: Path, body: bytes) -> dict[str, Any]:
    """``tracestore ingest`` of ``body``, then ``tracestore release``'s decision."""
    capture, task, db = tmp_path / "served.sse", tmp_path / "task.json", tmp_path / "t.db"
    capture.write_bytes(body)
    task.write_text(json.dumps({"answer_patterns": ["."]}))
    code, _, err = run("ingest", str(capture), "--attempt", "a", "--task", str(task), db=db)
    assert code == 0, err
    code, out, err = run("release", "a", "--json", db=db)
    assert code == 0, err
    decision: dict[str, Any] = json.loads(out)
    return decision


@pytest.mark.parametrize("capture", [CHAT, MESSAGES, RESPONSES])
def test_without_faults_the_rewrite_is_the_capture_byte_for_byte(capture: Path) -> None:
    body = capture.read_bytes()
    assert rewrite(APIS[capture], wire_frames(body), FrameFaults()) == body


# Every fault kind and every API in the default run (each API with two or more kinds);
# the other API x fault pairs run with -m slow.
@pytest.mark.parametrize(("capture", "faults", "status", "reasons"), [
    (CHAT, {"error_at_frame": 2}, "failed", ["native_failure"]),
    (CHAT, {"ending": "length"}, "limited", ["native_limit_reached"]),
    pytest.param(CHAT, {"ending": "refusal"}, "held", ["unknown_stop_reason"], marks=pytest.mark.slow),
    (CHAT, {"ending": "unknown"}, "held", ["unknown_stop_reason"]),
    pytest.param(CHAT, {"unknown_event_at_frame": 2}, "held", ["unknown_native_form"], marks=pytest.mark.slow),
    pytest.param(CHAT, {"non_text_delta": True}, "held", ["tool_use_not_allowed"], marks=pytest.mark.slow),
    pytest.param(MESSAGES, {"error_at_frame": 3}, "failed", ["native_failure"], marks=pytest.mark.slow),
    pytest.param(MESSAGES, {"ending": "length"}, "limited", ["native_limit_reached"], marks=pytest.mark.slow),
    (MESSAGES, {"ending": "refusal"}, "held", ["unknown_stop_reason"]),
    pytest.param(MESSAGES, {"ending": "unknown"}, "held", ["unknown_stop_reason"], marks=pytest.mark.slow),
    pytest.param(MESSAGES, {"unknown_event_at_frame": 2}, "held", ["unknown_native_form"], marks=pytest.mark.slow),
    (MESSAGES, {"second_text_block": True}, "held", ["unexpected_text_block"]),
    pytest.param(MESSAGES, {"non_text_delta": True}, "held", ["tool_use_not_allowed"], marks=pytest.mark.slow),
    (RESPONSES, {"error_at_frame": 5}, "failed", ["native_failure"]),
    pytest.param(RESPONSES, {"ending": "length"}, "limited", ["native_limit_reached"], marks=pytest.mark.slow),
    pytest.param(RESPONSES, {"ending": "refusal"}, "held", ["unknown_stop_reason"], marks=pytest.mark.slow),
    pytest.param(RESPONSES, {"ending": "unknown"}, "held", ["unknown_stop_reason"], marks=pytest.mark.slow),
    (RESPONSES, {"unknown_event_at_frame": 4}, "held", ["unknown_native_form"]),
    # The Responses normalizer keys text by output item: a second part of one message item
    # is read as that item's text told twice, which holds it too.
    (RESPONSES, {"second_text_block": True}, "held",
     ["duplicate_final_text", "final_text_mismatch"]),
    (RESPONSES, {"non_text_delta": True}, "held", ["tool_use_not_allowed"]),
])
def test_ingest_of_the_served_bytes_decides_as_the_fault_means(
        tmp_path: Path, capture: Path, faults: dict[str, Any], status: str,
        reasons: list[str]) -> None:
    decision = release_of(tmp_path, served(tmp_path, capture, **faults))
    assert (decision["status"], decision["reasons"]) == (status, reasons)
    assert decision["eligible"] is False


def test_anthropic_sdk_reads_each_fault_as_the_provider_s_own(tmp_path: Path) -> None:
    import anthropic

    faults: list[dict[str, Any]] = [
        {"error_at_frame": 3}, {"ending": "length"}, {"ending": "refusal"},
        {"ending": "unknown"}, {"unknown_event_at_frame": 2}, {"second_text_block": True},
        {"non_text_delta": True}]
    with FaultSequence(tmp_path, MESSAGES, faults) as sequence:
        def final(**faults: Any) -> Any:
            client = anthropic.Anthropic(base_url=sequence.url(**faults),
                                         api_key="sk-ant-test", max_retries=0)
            with client.messages.stream(model="claude-haiku-4-5", max_tokens=64,
                                        messages=QUESTION) as stream:
                return stream.get_final_message()

        with pytest.raises(anthropic.APIStatusError) as failed:
            final(error_at_frame=3)
        assert failed.value.body == {"type": "error", "error": {
            "type": "api_error", "message": failed.value.body["error"]["message"]}}
        assert final(ending="length").stop_reason == "max_tokens"
        assert final(ending="refusal").stop_reason == "refusal"
        assert final(ending="unknown").stop_reason == "mock_future_reason"
        assert [b.type for b in final(unknown_event_at_frame=2).content] == ["text"]
        two = final(second_text_block=True).content
        assert [b.type for b in two] == ["text", "text"] and two[0].text == "Hello"
        tool = final(non_text_delta=True).content
        assert [b.type for b in tool] == ["text", "tool_use"]
        assert tool[1].name == "lookup" and tool[1].input == {"query": "mock"}
    assert sequence.played() == list(range(len(faults)))


def test_openai_sdk_reads_each_responses_fault(tmp_path: Path) -> None:
    import openai

    faults: list[dict[str, Any]] = [
        {"error_at_frame": 5}, {"ending": "length"}, {"ending": "refusal"},
        {"unknown_event_at_frame": 4}, {"second_text_block": True}, {"non_text_delta": True}]
    with FaultSequence(tmp_path, RESPONSES, faults) as sequence:
        def events(**faults: Any) -> list[Any]:
            client = openai.OpenAI(base_url=f"{sequence.url(**faults)}/v1", api_key="sk-test",
                                   max_retries=0)
            return list(client.responses.create(model="gpt-4o", input="Capital of France?",
                                                stream=True))

        failed = events(error_at_frame=5)
        assert failed[-1].type == "response.failed"
        assert failed[-1].response.error.code == "server_error"
        limited = events(ending="length")[-1]
        assert limited.type == "response.incomplete"
        assert limited.response.incomplete_details.reason == "max_output_tokens"
        refused = events(ending="refusal")[-1].response.incomplete_details
        assert refused.reason == "content_filter"
        assert "response.mock_future_event" in [e.type for e in events(unknown_event_at_frame=4)]
        two = events(second_text_block=True)[-1].response
        assert two.output_text == "The capital of France is Paris. (a second text block)"
        assert [p.type for p in two.output[0].content] == ["output_text", "output_text"]
        tool = events(non_text_delta=True)
        assert [e.delta for e in tool
                if e.type == "response.function_call_arguments.delta"] == ['{"query": "mock"}']
        assert [o.type for o in tool[-1].response.output] == ["message", "function_call"]
    assert sequence.played() == list(range(len(faults)))


def test_openai_sdk_reads_each_chat_fault(tmp_path: Path) -> None:
    import openai

    faults: list[dict[str, Any]] = [
        {"error_at_frame": 2}, {"ending": "length"}, {"ending": "refusal"},
        {"ending": "unknown"}, {"unknown_event_at_frame": 2}, {"non_text_delta": True}]
    with FaultSequence(tmp_path, CHAT, faults) as sequence:
        def chunks(**faults: Any) -> list[Any]:
            client = openai.OpenAI(base_url=f"{sequence.url(**faults)}/v1", api_key="sk-test",
                                   max_retries=0)
            return list(client.chat.completions.create(model="gpt-5", messages=QUESTION,
                                                       stream=True))  # type: ignore[arg-type]

        with pytest.raises(openai.APIError) as failed:
            chunks(error_at_frame=2)
        assert failed.value.code == "server_error"  # type: ignore[attr-defined]

        def finish(found: list[Any]) -> list[str]:
            return [c.choices[0].finish_reason for c in found
                    if c.choices and c.choices[0].finish_reason]

        assert finish(chunks(ending="length")) == ["length"]
        assert finish(chunks(ending="refusal")) == ["content_filter"]
        assert finish(chunks(ending="unknown")) == ["mock_future_reason"]
        assert "chat.completion.mock_future_event" in [
            c.object for c in chunks(unknown_event_at_frame=2)]
        calls = [call for c in chunks(non_text_delta=True) if c.choices
                 for call in c.choices[0].delta.tool_calls or ()]
        assert calls[0].function.name == "lookup"
        assert "".join(c.function.arguments or "" for c in calls) == '{"query": "mock"}'
    assert sequence.played() == list(range(len(faults)))


@pytest.mark.parametrize(("capture", "faults", "code"), [
    (CHAT, {"second_text_block": True}, "mock_fault_not_supported"),
    (REAL / "gemini" / "sse-text.sse", {"ending": "length"}, "mock_fault_not_supported"),
    (REAL / "ollama" / "generate-granite-text.ndjson", {"error_at_frame": 0},
     "mock_fault_not_supported"),
    (MESSAGES, {"error_at_frame": 7}, "mock_fault_out_of_range"),
    (MESSAGES, {"ending": "sideways"}, "invalid_mock_scenario"),
])
def test_a_fault_the_capture_has_no_form_for_is_refused_before_serving(
        tmp_path: Path, capture: Path, faults: dict[str, Any], code: str) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"exchanges": [
        {"path": "/v1/x", "capture": str(capture), "faults": faults}]}))
    with pytest.raises(InputError) as refused:
        mock_app(path)
    assert refused.value.code == code


# -- exchanges from a store --------------------------------------------------------------

def _record(db: Path) -> None:
    """Two live turns through the official SDKs and the recording transport, prompts kept:
    trace ``chat`` (Chat Completions) and trace ``claude`` (Anthropic Messages)."""
    import anthropic
    import httpx2
    import openai

    from capture_server import CaptureServer
    from capture_server import route_for as capture_route
    from tracestore import Recorder
    from tracestore.recording.httpx_capture import RecordingTransport

    with CaptureServer() as server:
        server.routes["/v1/chat/completions"] = capture_route(CHAT)
        server.routes["/v1/messages"] = capture_route(MESSAGES)
        rec = Recorder(f"sqlite:///{db}", record_prompts=True)
        transport = RecordingTransport()
        http = httpx2.Client(transport=transport)
        try:
            with rec.turn("chat"):
                _chat_text(openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test",
                                         max_retries=0, http_client=http))
            with rec.turn("claude"):
                _claude_text(anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test",
                                                 max_retries=0, http_client=http))
            transport.flush()
            assert transport.failures == []
        finally:
            http.close()
            rec.close()


def _chat_text(client: Any, question: list[dict[str, str]] = QUESTION) -> str:
    stream = client.chat.completions.create(model="gpt-5", stream=True, messages=question)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def _claude_text(client: Any) -> str:
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=64,
                                messages=QUESTION) as stream:
        return "".join(stream.text_stream)


def test_recorded_attempts_play_back_through_the_sdks_with_exact_matching(
        tmp_path: Path) -> None:
    import anthropic
    import openai

    db = tmp_path / "recorded.db"
    _record(db)
    with RunningMock(from_store=str(db)) as mock:
        exchanges = mock.app.scenario.exchanges
        assert [e.path for e in exchanges] == ["/v1/chat/completions", "/v1/messages"]
        assert exchanges[0].request == {"model": "gpt-5", "stream": True,
                                        "messages": QUESTION}
        chat = openai.OpenAI(base_url=f"{mock.url}/v1", api_key="sk-test", max_retries=0)
        with pytest.raises(openai.BadRequestError) as changed:
            _chat_text(chat, [{"role": "user", "content": "Capital of Spain?"}])
        assert changed.value.code == "replay_request_mismatch"
        assert _chat_text(chat) == "Paris."
        claude = anthropic.Anthropic(base_url=mock.url, api_key="sk-ant-test", max_retries=0)
        assert _claude_text(claude) == "Hello"
    assert [e["status"] for e in mock.log] == [400, 200, 200]
    assert mock.app.bodies == [CHAT.read_bytes(), MESSAGES.read_bytes()]


def test_a_trace_and_a_scenario_field_choose_the_store_s_attempts(tmp_path: Path) -> None:
    db = tmp_path / "recorded.db"
    _record(db)
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"from_store": {"db": db.name, "trace": "claude"}}))
    [only] = mock_app(path).scenario.exchanges
    assert only.path == "/v1/messages" and only.request is not None
    assert only.request["messages"] == QUESTION
    refused = runner.invoke(app, ["mock", "--from-store", str(db), "--trace", "nowhere"])
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error[mock_store_no_exchanges]:")
