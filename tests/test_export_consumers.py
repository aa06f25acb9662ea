"""Real consumers of ``export --format otlp`` (issue 23): the same assertions against the
OTLP receiver stub (every run) and against Arize Phoenix (``phoenix serve`` on 127.0.0.1,
read back through its REST API).

Phoenix is heavy and pins its own dependencies, so it lives in its own virtual
environment: ``TRACESTORE_PHOENIX`` names its ``phoenix`` executable (``.ci/run`` installs
``arize-phoenix`` into ``.ci/phoenix-venv`` and sets it); else a ``phoenix`` on PATH is
used.  Without one the Phoenix case is skipped with that reason, except under ``CI=true``,
where it fails.  Phoenix starts once per module (about 15 s), with telemetry off.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clihelp import run
from otlphelp import Collector, pb_attributes

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, reply.read()
    except OSError:
        return 0, b""


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    executable = os.environ.get("TRACESTORE_PHOENIX") or shutil.which("phoenix")
    if not executable or not Path(executable).exists():
        reason = ("no Phoenix: set TRACESTORE_PHOENIX to a `phoenix` executable "
                  "(pip install arize-phoenix into its own venv; .ci/run does)")
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(_free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PHOENIX_ENABLE_AUTH": "false"}
    for name in [n for n in env if n.startswith("OTEL_")]:
        del env[name]
    log = (work / "phoenix.log").open("wb")
    process = subprocess.Popen([executable, "serve"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while _get(base + "/healthz")[0] != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (work / "phoenix.log").read_text("utf-8", "replace")[-2000:]
                pytest.fail(f"Phoenix did not start (exit {process.poll()}):\n{tail}")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        log.close()


def phoenix_spans(base: str, project: str, expected: int) -> list[dict]:
    """The project's spans through Phoenix's REST API, once all ``expected`` arrived."""
    deadline = time.monotonic() + 30
    while True:
        status, body = _get(f"{base}/v1/projects/{project}/spans?limit=100")
        spans = json.loads(body)["data"] if status == 200 else []
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


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
