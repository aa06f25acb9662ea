"""``export --format otlp`` spans that carry the story (issue 23): name, content, status,
times, frames summarized without loss, lone surrogates, routing and refusals, reviews."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import socket
from pathlib import Path

import pytest

from tracestore.store.log import EventStore

from clihelp import run
from otlphelp import Collector, attributes, otlp_spans, pb_attributes, split_turns

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"
GPT4O = REPO / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"
T8_ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."
T8_OLD_DELTA = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "


@pytest.fixture(scope="module")
def seed_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("otlp") / "seed.db"
    assert run("replay", str(SEED), "--json", db=db)[0] == 0
    return db


def all_spans_of(db: Path, tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "spans.json"
    code, _, err = run("export", "--format", "otlp", *args, "--out", str(out), db=db)
    assert code == 0, err
    return otlp_spans(json.loads(out.read_text("utf-8")))


def spans_of(db: Path, tmp_path: Path, *args: str) -> list[dict]:
    """The attempt spans only, in export order (the turns' root spans left out)."""
    return [s for s in all_spans_of(db, tmp_path, *args)
            if "tracestore.attempt_id" in attributes(s)]


def test_content_is_opt_in_and_carries_the_released_answer_or_the_candidate(
        seed_db: Path, tmp_path: Path) -> None:
    plain = spans_of(seed_db, tmp_path, "--trace", "t8")
    assert not any(T8_OLD_DELTA.strip() in json.dumps(s) for s in plain)
    old, new = spans_of(seed_db, tmp_path, "--trace", "t8", "--content")
    a_new, a_old = attributes(new), attributes(old)
    assert json.loads(a_new["gen_ai.output.messages"]) == [{
        "role": "assistant", "parts": [{"type": "text", "content": T8_ANSWER}],
        "finish_reason": "end_turn", "tracestore.release_status": "released"}]
    assert (a_new["output.value"], a_new["tracestore.output.kind"]) == (T8_ANSWER, "released")
    # The stopped attempt: its candidate as it stood when decided, with its status.
    out = json.loads(a_old["gen_ai.output.messages"])[0]
    assert (out["parts"][0]["content"], out["tracestore.release_status"]) == (
        T8_OLD_DELTA, "stopped")
    assert a_old["tracestore.output.kind"] == "candidate"
    assert (a_new["openinference.span.kind"], a_new["llm.token_count.prompt"],
            a_new["llm.token_count.completion"]) == ("LLM", "30", "20")
    assert [(e["name"], attributes(e).get("tracestore.text")) for e in new["events"]
            if e["name"] == "tracestore.text_block"] == [("tracestore.text_block", T8_ANSWER)]
    # --redact text wins over --content: digests only.
    redacted = spans_of(seed_db, tmp_path, "--trace", "t8", "--content", "--redact", "text")
    assert T8_OLD_DELTA.strip() not in json.dumps(redacted)
    import hashlib
    assert attributes(redacted[1])["output.value"] == \
        "sha256:" + hashlib.sha256(T8_ANSWER.encode()).hexdigest()


def test_status_description_and_error(seed_db: Path, tmp_path: Path) -> None:
    old, new = spans_of(seed_db, tmp_path, "--trace", "t8")
    assert old.get("status", {}) == {} and new["status"] == {"code": 1}  # UNSET, OK
    assert (attributes(old)["tracestore.release.status"],
            attributes(old)["tracestore.release.first_reason"]) == (
        "stopped", "local_stop_before_release")
    assert attributes(old)["tracestore.release.description"].startswith("A local Stop came")
    [failed] = spans_of(seed_db, tmp_path, "--trace", "s1-error")
    a = attributes(failed)
    assert a["tracestore.release.status"] == "failed"
    assert failed["status"] == {"code": 2, "message": "failed: " + ", ".join(
        a["tracestore.release.reasons"])}
    assert a["error.type"] == a["tracestore.release.reasons"][0]


def test_span_name_and_model_from_the_frames(tmp_path: Path) -> None:
    db = tmp_path / "gpt.db"
    assert run("ingest", str(GPT4O), "--attempt", "g", db=db)[0] == 0
    [span] = spans_of(db, tmp_path, "--trace", "g", "--content")
    a = attributes(span)
    assert span["name"] == f"chat {a['gen_ai.response.model']}"
    assert a["gen_ai.response.model"].startswith("gpt-4o")
    assert a["llm.model_name"] == a["gen_ai.response.model"]
    assert a["gen_ai.provider.name"] == "openai" and a["output.value"]


def test_an_ingest_or_replay_has_no_invented_duration(seed_db: Path) -> None:
    """All events of a file ingest share the command's time: a later command (a judgement
    a minute on) must not become a duration."""
    from tracestore.export.otlp import build_spans

    with EventStore(str(seed_db)) as store:
        events = list(store.iter_events(trace_id="t1"))
    base = events[0].recorded_at
    moved = [dataclasses.replace(e, recorded_at=base + dt.timedelta(seconds=i))
             for i, e in enumerate(events)]
    moved.append(dataclasses.replace(events[-1], recorded_at=base + dt.timedelta(seconds=600)))
    [span, root] = build_spans(moved)
    assert span.attributes["tracestore.timing"] == "not recorded"
    assert span.start_time == span.end_time == root.start_time == root.end_time
    assert {e.timestamp for e in span.events} == {span.start_time}
    assert "tracestore.time_to_first_token_ms" not in span.attributes
    assert "First Token Stream Event" not in [e.name for e in span.events]


def test_recorded_times_run_from_the_start_to_the_drain(tmp_path: Path) -> None:
    """Observed times (a recorder's or a scenario's ``at``): the span starts at the attempt's
    start, the first token is an event at the first text frame, the span ends at the drain."""
    def at(seconds: float) -> str:
        return (dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
                + dt.timedelta(seconds=seconds)).isoformat()

    steps = [{"open": "r", "attempt": "live", "api": "bedrock-converse-stream", "at": at(0)},
             {"reader": "r", "event": {"messageStart": {"role": "assistant"}}, "at": at(0.5)},
             {"reader": "r", "event": {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {
                 "text": "Hi"}}}, "at": at(1.25)},
             {"reader": "r", "event": {"contentBlockStop": {"contentBlockIndex": 0}},
              "at": at(2)},
             {"reader": "r", "event": {"messageStop": {"stopReason": "end_turn"}}, "at": at(3)},
             {"reader": "r", "local": "drain", "outcome": "clean", "at": at(4)}]
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"trace": "live", "steps": steps}), "utf-8")
    db = tmp_path / "live.db"
    code, _, err = run("replay", str(path), db=db)
    assert code == 0, err
    turns, attempts = split_turns(all_spans_of(db, tmp_path))
    span, root = attempts["live"], turns["live"]
    a = attributes(span)
    start, end = int(span["startTimeUnixNano"]), int(span["endTimeUnixNano"])
    assert a["tracestore.timing"] == "recorded"
    assert (end - start, a["gen_ai.response.time_to_first_chunk"],
            a["tracestore.time_to_first_token_ms"]) == (4 * 10**9, 1.25, 1250.0)
    [first] = [e for e in span["events"] if e["name"] == "First Token Stream Event"]
    assert int(first["timeUnixNano"]) - start == 1_250_000_000
    times = [int(e["timeUnixNano"]) for e in span["events"]
             if e["name"] != "First Token Stream Event"]
    assert times == sorted(times) and max(times) == end
    assert (root["startTimeUnixNano"], root["endTimeUnixNano"]) == (
        span["startTimeUnixNano"], span["endTimeUnixNano"])


def test_times_never_run_backwards_in_log_order(tmp_path: Path) -> None:
    """A recorder's writer takes a Stop's or a drain's time while it builds a batch and the
    store stamps the batch's frames when it commits: a Stop can read earlier than the frame
    it followed.  The log's order wins: such a time is lifted to the one before it, so the
    first token never comes after the drain that ends the span."""
    def at(seconds: float) -> str:
        return (dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
                + dt.timedelta(seconds=seconds)).isoformat()

    steps = [{"open": "r", "attempt": "early", "api": "bedrock-converse-stream", "at": at(0)},
             {"reader": "r", "event": {"messageStart": {"role": "assistant"}}, "at": at(0.5)},
             {"reader": "r", "event": {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {
                 "text": "Hi"}}}, "at": at(1.25)},
             {"reader": "r", "local": "stop", "at": at(1)},
             {"reader": "r", "local": "drain", "outcome": "eof", "at": at(1.1)}]
    path = tmp_path / "early.json"
    path.write_text(json.dumps({"trace": "early", "steps": steps}), "utf-8")
    db = tmp_path / "early.db"
    code, _, err = run("replay", str(path), db=db)
    assert code == 0, err
    _, attempts = split_turns(all_spans_of(db, tmp_path))
    span = attempts["early"]
    start, end = int(span["startTimeUnixNano"]), int(span["endTimeUnixNano"])
    assert end - start == 1_250_000_000
    [first] = [e for e in span["events"] if e["name"] == "First Token Stream Event"]
    assert int(first["timeUnixNano"]) == end
    times = [int(e["timeUnixNano"]) for e in span["events"]
             if e["name"] != "First Token Stream Event"]
    assert times == sorted(times)


def scenario(path: Path, deltas: list[str]) -> Path:
    steps = [{"open": "r", "attempt": "big", "api": "bedrock-converse-stream"},
             {"reader": "r", "event": {"messageStart": {"role": "assistant"}}}]
    steps += [{"reader": "r", "event": {"contentBlockDelta": {
        "contentBlockIndex": 0, "delta": {"text": d}}}} for d in deltas]
    steps += [{"reader": "r", "event": {"contentBlockStop": {"contentBlockIndex": 0}}},
              {"reader": "r", "event": {"messageStop": {"stopReason": "end_turn"}}},
              {"reader": "r", "local": "drain", "outcome": "clean"}]
    path.write_text(json.dumps({"trace": "big", "steps": steps}), "utf-8")
    return path


# The OpenTelemetry SDK's default limit is 128 events per span: 1,000 frames are already
# far past it, so the default run shows the frames summarized with that; the 10,000-frame
# run (the figure of the change that summarized them) runs with -m slow.
@pytest.mark.parametrize("frames", [1_000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_thousands_of_frames_lose_nothing(tmp_path: Path, frames: int) -> None:
    db = tmp_path / "big.db"
    deltas = [f"w{i} " for i in range(frames)]
    code, _, err = run("replay", str(scenario(tmp_path / "big.json", deltas)), db=db)
    assert code == 0, err
    code, stdout, err = run("export", "--format", "otlp", "--content", "--out",
                            str(tmp_path / "o.json"), "--json", db=db)
    assert code == 0, err
    assert json.loads(stdout)["dropped"] == 0
    _, attempts = split_turns(otlp_spans(json.loads((tmp_path / "o.json").read_text("utf-8"))))
    span = attempts["big"]
    assert span.get("droppedEventsCount", 0) == 0
    names = [e["name"] for e in span["events"]]
    assert names == ["tracestore.destination_write", "tracestore.frame",
                     "tracestore.text_block", "tracestore.frame",
                     "tracestore.frame", "tracestore.drain", "tracestore.release_decision"]
    block = attributes(span["events"][2])
    assert (block["tracestore.frames"], block["tracestore.text"]) == (str(frames), "".join(deltas))


def test_the_cli_says_how_many_were_dropped(tmp_path: Path, monkeypatch) -> None:
    import tracestore.export.otlp as otlp

    db = tmp_path / "small.db"
    assert run("replay", str(scenario(tmp_path / "s.json", ["a", "b"])), db=db)[0] == 0
    monkeypatch.setattr(otlp, "MAX_EVENTS", 2)
    code, stdout, err = run("export", "--format", "otlp", "--out", str(tmp_path / "o.json"),
                            "--json", db=db)
    assert code == 0, err
    assert json.loads(stdout)["dropped"] == 5  # 7 events, a limit of 2
    code, _, err = run("export", "--format", "otlp", "--out", str(tmp_path / "o.json"), db=db)
    assert "dropped 5 span events" in err and "(5 dropped)" in err


def test_a_lone_surrogate_does_not_crash_the_export(tmp_path: Path) -> None:
    db = tmp_path / "sur.db"
    assert run("replay", str(scenario(tmp_path / "s.json", ["ok \ud800 end"])), db=db)[0] == 0
    for args in ((), ("--content",), ("--content", "--redact", "text")):
        [span] = spans_of(db, tmp_path, *args)
        if args == ("--content",):
            assert attributes(span["events"][2])["tracestore.text"] == "ok \ufffd end"
    with Collector() as collector:
        code, _, err = run("export", "--format", "otlp", "--content", "--endpoint",
                           collector.url, db=db)
    assert code == 0, err
    [pb] = [s for s in collector.spans() if s.parent_span_id]
    assert pb_attributes(pb)["output.value"] == "ok \ufffd end"


OTEL_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
             "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
             "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in OTEL_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_standard_variables_route_and_name_the_spans(seed_db: Path, clean_env) -> None:
    with Collector() as collector:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.base + "/")
        clean_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-mlflow-experiment-id=7,"
                                                       "authorization=Bearer%20abc")
        clean_env.setenv("OTEL_RESOURCE_ATTRIBUTES",
                         "openinference.project.name=desk,deployment.environment=ci")
        code, stdout, err = run("export", "--format", "otlp", "--trace", "t8", "--header",
                                "x-extra=1", "--header", "x-mlflow-experiment-id=9",
                                "--service-name", "desk-app", "--json", db=seed_db)
    assert code == 0, err
    assert json.loads(stdout)["to"] == collector.url
    [(path, _, request)] = collector.received
    assert path == "/v1/traces"
    headers = collector.headers[0]
    assert (headers["x-mlflow-experiment-id"], headers["authorization"], headers["x-extra"]) \
        == ("9", "Bearer abc", "1")
    resource = pb_attributes(request.resource_spans[0].resource)
    assert resource["service.name"] == "desk-app"
    assert (resource["openinference.project.name"], resource["deployment.environment"]) == (
        "desk", "ci")
    # The signal-specific variable is used as given; --out still writes a file.
    with Collector() as collector:
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.base + "/custom")
        assert run("export", "--format", "otlp", "--trace", "t7", db=seed_db)[0] == 0
    assert [p for p, _, _ in collector.received] == ["/custom"]


def test_a_refusal_names_the_status_and_the_first_line_of_the_body(seed_db: Path,
                                                                    clean_env) -> None:
    body = b"experiment \x1b[31m42 does not exist\nsecond line\n"
    with Collector(status=404, body=body) as collector:
        code, _, stderr = run("export", "--format", "otlp", "--trace", "t8", "--endpoint",
                              collector.url, "--json", db=seed_db)
    error = json.loads(stderr)
    assert code == 1 and error["error"] == "export_failed" and error["http_status"] == 404
    assert error["message"] == (f"the OTLP endpoint {collector.url} refused the 3 spans: "
                                "HTTP 404: experiment \\u001b[31m42 does not exist")
    code, _, stderr = run("export", "--format", "otlp", "--header", "nope", "--endpoint",
                          collector.url, "--json", db=seed_db)
    assert code == 2 and json.loads(stderr)["error"] == "invalid_option"
    clean_env.setenv("OTEL_RESOURCE_ATTRIBUTES", "broken")
    code, _, stderr = run("export", "--format", "otlp", "--json", db=seed_db)
    assert code == 2 and "OTEL_RESOURCE_ATTRIBUTES" in json.loads(stderr)["message"]


def test_reviews_are_span_events(tmp_path: Path) -> None:
    db = tmp_path / "review.db"
    assert run("replay", str(SEED / "t7.json"), db=db)[0] == 0
    for value in ("first look", "second look"):
        code, _, err = run("review", "t7", "--set", f"evidence_gap={value}", "--reviewer",
                           "ana", "--evidence", "3", db=db)
        assert code == 0, err
    code, _, err = run("review", "t7", "--approve", "--reviewer", "bo", db=db)
    assert code == 0, err
    [span] = spans_of(db, tmp_path)
    reviews = [(e["name"], attributes(e)) for e in span["events"]
               if e["name"].startswith("tracestore.review.")]
    assert [name for name, _ in reviews] == [
        "tracestore.review.field_set", "tracestore.review.amended",
        "tracestore.review.approved"]
    (_, first), (_, amended), (_, approved) = reviews
    assert (first["tracestore.review.field"], first["tracestore.review.value"],
            first["tracestore.review.reviewer"], first["tracestore.review.evidence"],
            first["tracestore.review.template"]) == (
        "evidence_gap", "first look", "ana", ["3"], "trace-review")
    assert (amended["tracestore.review.value"],
            amended["tracestore.review.amends_position"]) == (
        "second look", first["tracestore.position"])
    assert approved["tracestore.review.reviewer"] == "bo"


def test_annotations_need_an_endpoint(seed_db: Path, tmp_path: Path) -> None:
    code, _, stderr = run("export", "--format", "otlp", "--annotations", "phoenix", "--out",
                          str(tmp_path / "x.json"), "--json", db=seed_db)
    assert code == 2 and json.loads(stderr)["error"] == "invalid_option"


def test_the_recorded_request_becomes_input_messages(seed_db: Path) -> None:
    from tracestore.export.otlp import build_spans

    with EventStore(str(seed_db)) as store:
        events = list(store.iter_events(trace_id="t1"))
    request = {"model": "claude-haiku", "system": [{"text": "Be brief."}],
               "messages": [{"role": "user", "content": [{"text": "When is the desk open?"}]}],
               "inferenceConfig": {"maxTokens": 200, "temperature": 0.2,
                                   "stopSequences": ["END"]}}
    events = [dataclasses.replace(e, event=e.event.model_copy(update={"request": request}))
              if e.type == "attempt.started" else e for e in events]
    [span, _root] = build_spans(events, content=True)
    a = span.attributes
    assert (span.name, a["gen_ai.request.model"]) == ("chat claude-haiku", "claude-haiku")
    assert json.loads(a["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "When is the desk open?"}]}]
    assert a["input.value"] == a["gen_ai.input.messages"]
    assert {k: v for k, v in a.items() if k.startswith("llm.input_messages.")} == {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Be brief.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "When is the desk open?"}
    # The settings are not content: they go out with or without --content.
    [plain, _root] = build_spans(events)
    for attrs in (a, plain.attributes):
        assert (attrs["gen_ai.request.max_tokens"], attrs["gen_ai.request.temperature"],
                tuple(attrs["gen_ai.request.stop_sequences"])) == (200, 0.2, ("END",))
        assert json.loads(attrs["llm.invocation_parameters"]) == {
            "model": "claude-haiku", "inferenceConfig": request["inferenceConfig"]}
    said = ("When is the desk open?", "Be brief.")
    assert not any(text in str(v) for v in plain.attributes.values() for text in said)
    assert not any(k.startswith(("llm.input_messages", "input.", "gen_ai.input"))
                   for k in plain.attributes)
    [redacted, _root] = build_spans(events, content=True, redact=True)
    assert not any(text in str(v) for v in redacted.attributes.values() for text in said)
    assert redacted.attributes["llm.input_messages.1.message.content"].startswith("sha256:")


def test_response_id_stream_conversation_and_reasoning_tokens(tmp_path: Path) -> None:
    db = tmp_path / "o3.db"
    o3 = REPO / "fixtures" / "real" / "openai-responses" / "reasoning-summary-o3-mini.sse"
    assert run("ingest", str(o3), "--attempt", "o3", "--trace", "conv", db=db)[0] == 0
    [span] = spans_of(db, tmp_path)
    a = attributes(span)
    assert (a["gen_ai.response.id"], a["gen_ai.request.stream"], a["gen_ai.conversation.id"],
            a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"],
            a["gen_ai.usage.reasoning.output_tokens"], a["gen_ai.usage.cache_read.input_tokens"],
            a["llm.token_count.completion_details.reasoning"],
            a["llm.token_count.prompt_details.cache_read"], a["llm.token_count.total"]) == (
        "resp_68c42d0fb418819dbfa579f69406b49508fbf9b1584184ff", True, "conv",
        "13", "1680", "1408", "0", "1408", "0", "1693")
    assert (a["gen_ai.provider.name"], a["llm.provider"]) == ("openai", "openai")


@pytest.mark.parametrize(("usage", "expected"), [
    # Anthropic counts input without the cache; the conventions count it in.
    ({"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5,
      "output_tokens": 7},
     {"gen_ai.usage.input_tokens": 115, "gen_ai.usage.output_tokens": 7,
      "gen_ai.usage.cache_read.input_tokens": 100,
      "gen_ai.usage.cache_creation.input_tokens": 5}),
    ({"inputTokens": 30, "outputTokens": 20, "totalTokens": 50},
     {"gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 20}),
    # Gemini counts output without the thoughts; the conventions count them in.
    ({"promptTokenCount": 8, "candidatesTokenCount": 4, "thoughtsTokenCount": 16,
      "cachedContentTokenCount": 6, "totalTokenCount": 28},
     {"gen_ai.usage.input_tokens": 8, "gen_ai.usage.output_tokens": 20,
      "gen_ai.usage.reasoning.output_tokens": 16,
      "gen_ai.usage.cache_read.input_tokens": 6}),
    ({"prompt_tokens": 9, "completion_tokens": 3,
      "prompt_tokens_details": {"cached_tokens": 4},
      "completion_tokens_details": {"reasoning_tokens": 2}},
     {"gen_ai.usage.input_tokens": 9, "gen_ai.usage.output_tokens": 3,
      "gen_ai.usage.cache_read.input_tokens": 4, "gen_ai.usage.reasoning.output_tokens": 2}),
    (None, {}),
])
def test_usage_in_the_conventions_terms(usage: dict | None, expected: dict) -> None:
    from tracestore.export.otlp_attrs import usage_attributes

    got = usage_attributes(usage)
    assert {k: v for k, v in got.items() if k.startswith("gen_ai.")} == expected


#: The names and values the export may emit outside ``tracestore.*``, with their source:
#: GenAI = the OpenTelemetry GenAI registry (open-telemetry/semantic-conventions-genai,
#: model/gen-ai/registry.yaml, all "development" stability); OI = OpenInference
#: (Arize-ai/openinference, openinference-semantic-conventions, ``SpanAttributes``,
#: ``MessageAttributes`` and the value enums); OTel = the general ``error.type``.
CONVENTIONS: dict[str, tuple[str, frozenset[str] | None]] = {
    "gen_ai.operation.name": ("GenAI", frozenset({"chat"})),
    "gen_ai.provider.name": ("GenAI", frozenset({"openai", "anthropic", "aws.bedrock",
                                                 "gcp.gemini", "x_ai"})),
    "gen_ai.conversation.id": ("GenAI", None),
    "gen_ai.request.model": ("GenAI", None),
    "gen_ai.request.stream": ("GenAI", None),
    "gen_ai.request.max_tokens": ("GenAI", None),
    "gen_ai.request.temperature": ("GenAI", None),
    "gen_ai.request.top_p": ("GenAI", None),
    "gen_ai.request.top_k": ("GenAI", None),
    "gen_ai.request.stop_sequences": ("GenAI", None),
    "gen_ai.request.frequency_penalty": ("GenAI", None),
    "gen_ai.request.presence_penalty": ("GenAI", None),
    "gen_ai.request.seed": ("GenAI", None),
    "gen_ai.response.id": ("GenAI", None),
    "gen_ai.response.model": ("GenAI", None),
    "gen_ai.response.finish_reasons": ("GenAI", None),
    "gen_ai.response.time_to_first_chunk": ("GenAI", None),
    "gen_ai.usage.input_tokens": ("GenAI", None),
    "gen_ai.usage.output_tokens": ("GenAI", None),
    "gen_ai.usage.cache_read.input_tokens": ("GenAI", None),
    "gen_ai.usage.cache_creation.input_tokens": ("GenAI", None),
    "gen_ai.usage.reasoning.output_tokens": ("GenAI", None),
    "gen_ai.input.messages": ("GenAI", None),
    "gen_ai.output.messages": ("GenAI", None),
    "error.type": ("OTel", None),
    "openinference.span.kind": ("OI", frozenset({"LLM", "CHAIN"})),
    "llm.provider": ("OI", frozenset({"openai", "anthropic", "aws", "google", "xai",
                                      "ollama"})),
    "llm.model_name": ("OI", None),
    "llm.invocation_parameters": ("OI", None),
    "llm.token_count.prompt": ("OI", None),
    "llm.token_count.completion": ("OI", None),
    "llm.token_count.total": ("OI", None),
    "llm.token_count.prompt_details.cache_read": ("OI", None),
    "llm.token_count.prompt_details.cache_write": ("OI", None),
    "llm.token_count.completion_details.reasoning": ("OI", None),
    "llm.input_messages.N.message.role": ("OI", None),
    "llm.input_messages.N.message.content": ("OI", None),
    "input.value": ("OI", None), "input.mime_type": ("OI", None),
    "output.value": ("OI", None), "output.mime_type": ("OI", None),
    "metadata": ("OI", None),
}


def test_every_attribute_name_and_value_is_a_published_one(tmp_path: Path) -> None:
    import re

    db = tmp_path / "all.db"
    for name in ("t8.json", "t8-buggy-app.json", "s1-error.json"):
        assert run("replay", str(SEED / name), db=db)[0] == 0
    real = REPO / "fixtures" / "real"
    for i, capture in enumerate((GPT4O, real / "openai-responses" /
                                 "reasoning-summary-o3-mini.sse")):
        assert run("ingest", str(capture), "--attempt", f"real-{i}", db=db)[0] == 0
    seen: dict[str, set] = {}
    for span in all_spans_of(db, tmp_path, "--content"):
        for key, value in attributes(span).items():
            if not key.startswith("tracestore."):
                seen.setdefault(re.sub(r"\.\d+\.", ".N.", key), set()).add(str(value))
    assert set(seen) <= set(CONVENTIONS), set(seen) - set(CONVENTIONS)
    for key, values in seen.items():
        allowed = CONVENTIONS[key][1]
        assert allowed is None or values <= allowed, (key, values - allowed)
    assert seen["llm.provider"] == {"aws", "openai"}
    assert seen["gen_ai.provider.name"] == {"aws.bedrock", "openai"}


def test_an_unreachable_endpoint_is_a_typed_error(seed_db: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    code, _, stderr = run("export", "--format", "otlp", "--trace", "t7", "--endpoint",
                          f"http://127.0.0.1:{port}/v1/traces", "--json", db=seed_db)
    error = json.loads(stderr)
    assert code == 1 and error["error"] == "export_failed"
    assert error["message"].startswith(f"the OTLP endpoint http://127.0.0.1:{port}/v1/traces "
                                       "could not be reached: ConnectError")


def test_control_and_bidi_characters_reach_a_span_as_visible_escapes() -> None:
    """Issue 26: the same neutralizer as every other output — an ESC or U+202E in model
    text is shown as an escape in the span, never passed raw to a trace viewer."""
    from tracestore.export.otlp import inert

    hostile = "Paris\x1b[31m is \u202eecnarF\x00.\nNext line\tcol"
    assert inert(hostile) == "Paris\\x1b[31m is \\u202eecnarF\\x00.\nNext line\tcol"
    assert inert({"gen_ai.output.messages": [hostile, 3]}) == {
        "gen_ai.output.messages": [inert(hostile), 3]}
    assert inert("\ud800") == "\ufffd"


def test_each_turn_is_a_root_span_that_says_how_it_ended(seed_db: Path, tmp_path: Path) -> None:
    """The turn's root span: OK only when an answer was released and the audit found no
    violation; its attempts hang under it, a retry linked to the attempt it replaces."""
    db = tmp_path / "turns.db"
    for name in ("t8.json", "t8-buggy-app.json", "s1-error.json"):
        assert run("replay", str(SEED / name), db=db)[0] == 0
    steps = [{"open": "r", "attempt": "halt", "api": "bedrock-converse-stream"},
             {"reader": "r", "event": {"messageStart": {"role": "assistant"}}},
             {"reader": "r", "event": {"contentBlockDelta": {
                 "contentBlockIndex": 0, "delta": {"text": "Half an ans"}}}},
             {"reader": "r", "local": "stop"}]
    (tmp_path / "halt.json").write_text(json.dumps({"trace": "halt", "steps": steps}))
    assert run("replay", str(tmp_path / "halt.json"), db=db)[0] == 0
    turns, attempts = split_turns(all_spans_of(db, tmp_path))
    assert {t: (s["name"], s["status"]) for t, s in turns.items()} == {
        "t8": ("turn t8", {"code": 1}),
        "t8-buggy-app": ("turn t8-buggy-app", {"code": 2, "message": (
            "violation: answer_mismatch, old_attempt_text_in_answer, "
            "duplicate_history_entry")}),
        "s1-error": ("turn s1-error", {"code": 2, "message": "failed: " + attributes(
            attempts["s1-error"])["tracestore.release.reasons"][0]}),
        "halt": ("turn halt", {"code": 2, "message": "stopped: local_stop_before_release"}),
    }
    root = turns["t8"]
    assert "parentSpanId" not in root
    assert {a: s.get("parentSpanId") for a, s in attempts.items()
            if a.startswith("t8-")} == {"t8-old": root["spanId"], "t8-new": root["spanId"]}
    assert {s["traceId"] for a, s in attempts.items() if a.startswith("t8-")} == {
        root["traceId"]}
    # Attempt statuses: released OK, stopped UNSET (the user's choice), failed ERROR.
    assert (attempts["t8-new"]["status"], attempts["t8-old"].get("status", {}),
            attempts["halt"].get("status", {}), attempts["s1-error"]["status"]["code"]) == (
        {"code": 1}, {}, {}, 2)
    [link] = attempts["t8-new"]["links"]
    assert (link["spanId"], attributes(attempts["t8-new"])["tracestore.retry_of"]) == (
        attempts["t8-old"]["spanId"], "t8-old")
    a = attributes(root)
    assert (a["openinference.span.kind"], a["gen_ai.conversation.id"],
            a["tracestore.turn.status"], a["tracestore.turn.attempt_id"],
            a["tracestore.turn.attempts"], a["tracestore.audit.violations"]) == (
        "CHAIN", "t8", "released", "t8-new", "2", [])
    buggy = turns["t8-buggy-app"]
    assert [(e["name"], attributes(e)["tracestore.code"]) for e in buggy["events"]] == [
        ("tracestore.violation", "answer_mismatch"),
        ("tracestore.violation", "old_attempt_text_in_answer"),
        ("tracestore.violation", "duplicate_history_entry")]
    # The root spans the attempts under it.
    assert int(root["startTimeUnixNano"]) == min(
        int(s["startTimeUnixNano"]) for a, s in attempts.items() if a.startswith("t8-"))
    assert int(root["endTimeUnixNano"]) == max(
        int(s["endTimeUnixNano"]) for a, s in attempts.items() if a.startswith("t8-"))
