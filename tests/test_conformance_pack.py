"""The conformance pack (``tracestore.mock.conformance``): every case is a scenario the mock
accepts, its captures are what ``tools/conformance_captures.py`` encodes from seed 003,
the capture an app reads to its end decides as the case expects, and ``case.check`` fails
an app that wrote what the case does not allow even where the audit has nothing to say."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tracestore.api import open_store
from tracestore.mock.conformance import case, cases, conformance_dir
from tracestore.mock.scenario import load

ROOT = Path(__file__).resolve().parents[1]


def test_the_pack_lists_the_seed_cases() -> None:
    assert conformance_dir() == ROOT / "fixtures" / "conformance"
    assert [c.name for c in cases()] == [
        "s1-released", "t1-released-with-usage", "s2-native-failure", "t2-native-exception",
        "t3-length-limit", "t4-drop-eof", "t4-drop-reset", "t7-stop", "t8-stop-retry",
        "v4-unknown-finish-reason", "v5-error-after-end", "v6-stop-after-answer"]
    assert len(case("t8-stop-retry").attempts) == 2
    with pytest.raises(KeyError, match="s1-released"):
        case("t9")


def test_the_captures_are_the_encoders_own() -> None:
    spec = importlib.util.spec_from_file_location("conformance_captures",
                                                  ROOT / "tools" / "conformance_captures.py")
    assert spec and spec.loader
    encoder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(encoder)
    folder = conformance_dir() / "captures"
    assert sorted(p.name for p in folder.iterdir()) == sorted(encoder.CAPTURES)
    for name, events in encoder.CAPTURES.items():
        assert (folder / name).read_bytes() == encoder.sse(events), name


@pytest.mark.parametrize("found", [c for c in cases() if c.user in ("read", "read_then_stop")],
                         ids=lambda c: c.name)
def test_a_read_case_decides_as_expected(found, tmp_path: Path) -> None:
    """The bytes an app reads to the end (up to a scripted reset) decide the case's status."""
    scenario, bodies = load(found.scenario)
    (exchange,) = scenario.exchanges
    body = bodies[0][:exchange.faults.cut_at_byte]
    with open_store(f"sqlite:///{tmp_path / 't.db'}", create=True) as store:
        store.ingest(body, filename=Path(exchange.capture).name, attempt_id="a",
                     task=found.task)
        assert store.release("a").status == found.attempts[0].status


def test_every_scenario_file_is_a_case() -> None:
    named = {c.scenario.name for c in cases()}
    assert named == {p.name for p in conformance_dir().glob("*.json")} - {"cases.json"}
    doc = json.loads((conformance_dir() / "cases.json").read_text(encoding="utf-8"))
    assert doc["api"] == "openai-chat"


def _turn(tracestore_mock, tracestore_recorder, name: str, writes: dict[str, bool]) -> str:
    """The case's scenario read to its end by the openai SDK, then ``writes``
    (destination → cut off) of the text read."""
    import httpx2
    import openai

    from tracestore.recording import attempt_of
    from tracestore.recording.httpx_capture import RecordingTransport

    found = case(name)
    mock = tracestore_mock(found.scenario)
    client = openai.OpenAI(base_url=f"{mock.url}/v1", api_key="sk-test", max_retries=0,
                           http_client=httpx2.Client(transport=RecordingTransport()))
    with tracestore_recorder.turn(name, task=found.task):
        stream = client.chat.completions.create(
            model="gpt-4o-mini", stream=True,
            messages=[{"role": "user", "content": found.question}])
        attempt = attempt_of(stream)
        text = "".join(c.delta.content or "" for chunk in stream for c in chunk.choices)
        for destination, cut_off in writes.items():
            attempt.destination(destination, text, **({"cut_off": True} if cut_off else {}))
    client.close()
    return name


def test_check_passes_an_app_that_does_what_the_case_allows(
        tracestore_mock, tracestore_recorder) -> None:
    trace = _turn(tracestore_mock, tracestore_recorder, "s1-released",
                  {"ui": False, "history": False})
    case("s1-released").check(tracestore_recorder, trace)


def test_check_fails_an_answer_left_out_of_history(tracestore_mock, tracestore_recorder
                                                   ) -> None:
    """Writing nothing breaks no release rule, so the audit is clean: the case's expected
    outcome is what fails it."""
    trace = _turn(tracestore_mock, tracestore_recorder, "s1-released", {"ui": False})
    with pytest.raises(AssertionError, match=r"history holds nothing, the case allows "
                                             r"answer"):
        case("s1-released").check(tracestore_recorder, trace)


def test_check_fails_with_the_audit_first(tracestore_mock, tracestore_recorder) -> None:
    trace = _turn(tracestore_mock, tracestore_recorder, "t3-length-limit", {"history": False})
    with pytest.raises(AssertionError, match="ineligible_text_in_destination"):
        case("t3-length-limit").check(tracestore_recorder, trace)
