"""Real consumers of ``export --format otlp`` (issue 23): the same assertions against the
OTLP receiver stub (every run) and against Arize Phoenix (``phoenix serve`` on 127.0.0.1,
read back through its REST API).

Phoenix is started by ``phoenixhelp`` (``TRACESTORE_PHOENIX`` names its executable;
without one the Phoenix case is skipped, except under ``CI=true``, where it fails).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from clihelp import run
from otlphelp import Collector, pb_attributes
from phoenixhelp import get as _get, phoenix, phoenix_spans  # noqa: F401 - a fixture

#: A long run: `pytest -m slow` runs it, and so does .ci/run.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"
GPT4O = REPO / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"
T8_ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."
T8_CANDIDATE = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "
GPT_ANSWER = "The capital of France is Paris."


@pytest.fixture(scope="module")
def story_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("consumers") / "story.db"
    for scenario in ("t8.json", "s1-error.json"):
        assert run("replay", str(SEED / scenario), db=db)[0] == 0
    code, _, err = run("ingest", str(GPT4O), "--attempt", "gpt", db=db)
    assert code == 0, err
    for args in (("--set", "evidence_gap=first look", "--reviewer", "ana"),
                 ("--set", "evidence_gap=second look", "--reviewer", "ana"),
                 ("--approve", "--reviewer", "bo")):
        code, _, err = run("review", "t8-new", *args, db=db)
        assert code == 0, err
    return db


def test_reviews_become_phoenix_annotations_latest_value_wins(story_db: Path) -> None:
    from tracestore.export.phoenix import annotations
    from tracestore.store.log import EventStore

    with EventStore(str(story_db)) as store:
        items = annotations(list(store.iter_events()))
    assert [(a["name"], a["result"]["label"], a["identifier"], a["annotator_kind"])
            for a in items] == [
        ("evidence_gap", "second look", "tracestore:trace-review:evidence_gap", "HUMAN"),
        ("approved", "approved", "tracestore:trace-review:approved:bo", "HUMAN")]
    assert items[0]["metadata"]["amends_position"] == items[0]["metadata"]["position"] - 1


def check_story(spans: dict[str, dict], turns: dict[str, dict]) -> None:
    """``spans``: attempt id → {name, status (OK/ERROR/UNSET), attributes, events, parent};
    ``turns``: trace id → the same for the turn's root span (and its span id)."""
    assert set(spans) == {"t8-old", "t8-new", "s1-error", "gpt"}
    assert set(turns) == {"t8", "s1-error", "gpt"}
    # The turn's outcome at the top: the root's status, the attempts under it.
    assert {t: (turns[t]["name"], turns[t]["status"]) for t in turns} == {
        "t8": ("turn t8", "OK"), "s1-error": ("turn s1-error", "ERROR"),
        "gpt": ("turn gpt", "ERROR")}
    assert spans["t8-old"]["parent"] == spans["t8-new"]["parent"] == turns["t8"]["span_id"]
    assert turns["t8"]["attributes"]["tracestore.turn.attempt_id"] == "t8-new"
    old, new, failed, gpt = (spans[a] for a in ("t8-old", "t8-new", "s1-error", "gpt"))
    # The model name, from the frames.
    assert (gpt["name"], gpt["attributes"]["llm.model_name"]) == (
        "chat gpt-4o-2024-08-06", "gpt-4o-2024-08-06")
    assert gpt["attributes"]["output.value"] == GPT_ANSWER
    # The answer text: released for the retry, the candidate for the stopped attempt.
    assert new["attributes"]["output.value"] == T8_ANSWER
    assert old["attributes"]["output.value"] == T8_CANDIDATE
    # The status.
    assert (new["status"], new["attributes"]["tracestore.release.status"]) == ("OK", "released")
    assert (old["status"], old["attributes"]["tracestore.release.status"]) == (
        "UNSET", "stopped")
    assert (failed["status"], failed["attributes"]["tracestore.release.status"]) == (
        "ERROR", "failed")
    assert gpt["attributes"]["tracestore.release.status"] == "held"
    # OpenInference metadata (JSON on the wire; Phoenix flattens it into metadata.*).
    attrs = old["attributes"]
    meta = json.loads(attrs["metadata"]) if "metadata" in attrs else {
        k.removeprefix("metadata."): v for k, v in attrs.items() if k.startswith("metadata.")}
    assert (meta["release_status"], meta["release_reasons"], meta["attempt_id"]) == (
        "stopped", ["local_stop_before_release"], "t8-old")
    # The Stop event (and every other event of the stopped attempt, in order).
    assert old["events"] == [
        "tracestore.destination_write", "tracestore.frame", "tracestore.text_block",
        "tracestore.local_stop", "tracestore.release_decision", "tracestore.text_block",
        "tracestore.frame"]
    assert "tracestore.local_stop" not in new["events"]


STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def test_the_story_reaches_the_otlp_stub(story_db: Path) -> None:
    with Collector() as collector:
        code, _, err = run("export", "--format", "otlp", "--content", "--endpoint",
                           collector.url, db=story_db)
    assert code == 0, err
    spans, turns = {}, {}
    for span in collector.spans():
        attrs = pb_attributes(span)
        item = {"name": span.name, "status": STATUS[span.status.code], "attributes": attrs,
                "events": [e.name for e in span.events], "span_id": span.span_id.hex(),
                "parent": span.parent_span_id.hex() or None}
        if "tracestore.attempt_id" in attrs:
            spans[attrs["tracestore.attempt_id"]] = item
        else:
            turns[attrs["tracestore.trace_id"]] = item
    check_story(spans, turns)


def test_the_story_reaches_phoenix(story_db: Path, phoenix: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    project = f"tracestore-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    code, stdout, err = run("export", "--format", "otlp", "--content", "--endpoint",
                            phoenix + "/v1/traces", "--annotations", "phoenix", "--json",
                            db=story_db)
    assert code == 0, err
    assert json.loads(stdout)["annotations"] == 2
    spans, turns = {}, {}
    stored = phoenix_spans(phoenix, project, 7)
    for span in stored:
        attrs = span["attributes"]
        item = {"name": span["name"], "status": span["status_code"], "attributes": attrs,
                "events": [e["name"] for e in span["events"]],
                "span_id": span["context"]["span_id"], "parent": span.get("parent_id")}
        if "tracestore.attempt_id" in attrs:
            assert span["span_kind"] == "LLM"
            spans[attrs["tracestore.attempt_id"]] = item
        else:
            assert span["span_kind"] == "CHAIN"
            turns[attrs["tracestore.trace_id"]] = item
    check_story(spans, turns)
    # The review record as Phoenix span annotations on the retry's span.
    span_id = spans["t8-new"]["span_id"]
    status, body = _get(f"{phoenix}/v1/projects/{project}/span_annotations?span_ids={span_id}")
    assert status == 200
    assert sorted((a["name"], a["result"]["label"], a["annotator_kind"])
                  for a in json.loads(body)["data"]) == [
        ("approved", "approved", "HUMAN"), ("evidence_gap", "second look", "HUMAN")]
    # Phoenix's own reading of the GenAI output message.
    assert spans["t8-new"]["attributes"]["llm.output_messages.0.message.content"] == T8_ANSWER
