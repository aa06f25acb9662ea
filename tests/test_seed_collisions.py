"""Where two seeds decide the same kind of fact differently, each seed's own example keeps
its seed's result under its own profile (docs/release-policy.md, "Where the seeds
collide"): the status comes from the profile's seed, the envelope from seed 004."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.projections.envelope import SORRY, project_envelope
from tracestore.projections.release import decide_with_view

ROOT = Path(__file__).resolve().parents[1]


def _scenario(path: str) -> dict[str, Any]:
    return json.loads((ROOT / "fixtures" / path).read_text(encoding="utf-8"))


def _decide(doc: dict[str, Any], attempt: str) -> tuple[Any, dict[str, Any] | None]:
    _, events = preview_replay(parse_scenario(doc))
    decision, view = decide_with_view(events, attempt)
    envelope = project_envelope(decision, view)
    return decision, envelope.to_dict() if envelope is not None else None


def _env(state: str, text: str, code: str, retryable: bool) -> dict[str, Any]:
    return {"schema_version": 2, "state": state, "text": text, "code": code,
            "retryable": retryable, "result": None}


def test_seed000_transport_io_error_is_an_error_under_its_profile() -> None:
    decision, envelope = _decide(_scenario("seed000/controlled-transport-io-error.json"),
                                 "seed000-io-error")
    assert (decision.status, decision.reasons) == ("failed",
                                                   ("missing_terminal", "transport_io_error"))
    assert envelope == _env("error", SORRY, "stream_error", True)


def test_the_same_transport_error_under_seed003s_profile_is_interrupted() -> None:
    doc = copy.deepcopy(_scenario("seed003/t4.json"))
    assert doc["profile"] == "bedrock-converse-text"
    doc["trace"] = "t4-io-error"
    doc["steps"][-1]["outcome"] = "error"
    doc.pop("expected", None)
    decision, envelope = _decide(doc, "t4")
    assert (decision.status, decision.reasons) == ("interrupted",
                                                   ("no_native_terminal", "drain_error"))
    assert envelope is not None
    assert (envelope["state"], envelope["code"]) == ("partial", "interrupted")


def test_seed003_t2_is_interrupted_and_shows_seed004s_stream_error() -> None:
    decision, envelope = _decide(_scenario("seed003/t2.json"), "t2")
    assert (decision.status, decision.reasons) == ("interrupted", ("native_exception",))
    # the exception event is an error mid-stream: the fixed message, never the partial
    assert envelope == _env("error", SORRY, "stream_error", True)


def test_seed003_t4_dropped_stream_stays_partial() -> None:
    decision, envelope = _decide(_scenario("seed003/t4.json"), "t4")
    assert decision.status == "interrupted"
    assert envelope is not None and (envelope["state"], envelope["code"]) == (
        "partial", "interrupted")


def test_seed004_stream_error_is_the_error_envelope_under_its_profile(tmp_path: Path) -> None:
    from tracestore.events import StoredEvent, TaskRule
    from tracestore.ingest import plan_ingest
    from tracestore.projections.attempt import project_attempt
    from tracestore.projections import decide_release
    import datetime as dt

    body = (b'event: chunk\ndata: {"text": "Standard delivery ta"}\n\n'
            b'event: error\ndata: {"schema_version": 2, "state": "error", "text": "'
            + SORRY.encode() + b'", "code": "stream_error", "retryable": true, '
            b'"result": null}\n\n')
    plan = plan_ingest(body, filename="faq.sse", attempt_id="a",
                       task=TaskRule(answer_patterns=("",)))
    assert plan.api == "faq-endpoint"
    stamp = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    events = [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1, stamp, n.trace_id,
                          n.event, "") for i, n in enumerate(plan.events)]
    decision = decide_release(events, "a")
    assert (decision.status, decision.reasons) == ("failed", ("endpoint_error",))
    envelope = project_envelope(decision, project_attempt(events, "a"))
    assert envelope is not None
    assert envelope.to_dict() == _env("error", SORRY, "stream_error", True)
