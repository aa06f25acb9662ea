"""Recording an agent run live: logged verdicts (not implied), re-derived on finish."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agenthelp import cases, trial
from tracestore.recording.agent import AgentRunRecorder
from tracestore.errors import InputError
from tracestore.projections import reasons as R
from tracestore.projections.destinations import audit
from tracestore.recording.recorder import Recorder


def _replay(rec: Recorder, value: dict[str, Any], run_id: str, *,
            verdicts: dict[int, tuple[str, str | None]] | None = None) -> Any:
    """Feed a recorded agent trial through the live API, as the application would."""
    result = value["result"]
    case = cases()[value["case_id"]]
    run = AgentRunRecorder(rec, run_id, question=result["question"], version=result["version"],
                           mode=result["mode"], limits=result["limits"],
                           model="gemini-3.8-flash",
                           task={"answer_patterns": case["answer_patterns"],
                                 "forbidden_patterns": case["forbidden_patterns"]})
    observations = iter(result["observations"])
    for i, decision in enumerate(result["decisions"]):
        run.model_called(usage=value["provider_usage"][i], request={"call": i})
        index = run.proposed(decision)
        stage, code = (verdicts or {}).get(index, ("admitted", None))
        if stage == "refused":
            run.refused(index, code or "")
            continue
        run.admitted(index)
        if decision["action"] in ("search", "read"):
            obs = next(observations)
            run.observed(obs["tool"], obs["arguments"], obs["result"])
    return run.finished(result["status"], result["reason"], result["answer"],
                        result["citations"], result["usage"], value["elapsed_seconds"])


def test_a_live_run_is_released_with_logged_verdicts(tmp_path: Path) -> None:
    with Recorder(f"sqlite:///{tmp_path / 'live.db'}") as rec:
        decision = _replay(rec, trial("overwrite-agent-1"), "live-1")
        assert (decision.status, decision.reasons, decision.answer) == (
            R.RELEASED, (R.CITATION_CONTRACT_PASSED, R.ADMISSION_AGREES, R.SEMANTIC_ACCEPTED),
            "In Python 3.12, Path.write_text overwrites an existing file.")
        events = rec.store.read(trace_id="live-1")
    verdicts = [e.event for e in events if e.type == "model.decision"
                and e.event.stage != "proposed"]
    assert [(v.stage, v.index, v.implied) for v in verdicts] == [
        ("admitted", 0, False), ("admitted", 1, False), ("admitted", 2, False)]
    recorded = [e.event for e in events if e.type == "release.decided"]
    assert [(d.status, d.decided_at_position) for d in recorded] == [
        ("released", decision.decided_at_position)]
    calls = [e.event for e in events if e.type == "model.called"]
    assert calls[0].usage == trial("overwrite-agent-1")["provider_usage"][0]
    assert calls[0].request_sha256 is not None


def test_a_live_refusal_the_rederivation_does_not_share_is_held(tmp_path: Path) -> None:
    value = trial("newline-version-agent-1")
    with Recorder(f"sqlite:///{tmp_path / 'live.db'}") as rec:
        # The application refused the duplicate search with the wrong code.
        decision = _replay(rec, value, "live-2", verdicts={2: ("refused", "search_limit")})
        assert (decision.status, decision.reasons) == (R.HELD, (R.ADMISSION_DISAGREEMENT,))
        violations = audit(rec.store.read(trace_id="live-2")).violations
    assert [v.code for v in violations] == ["admission_disagreement"]
    assert violations[0].message == ('decision 2 (search) recorded refused search_limit; '
                                     're-derived refused duplicate_query')


def test_bad_live_input_is_a_typed_error(tmp_path: Path) -> None:
    with Recorder(f"sqlite:///{tmp_path / 'live.db'}") as rec:
        with pytest.raises(InputError) as caught:
            AgentRunRecorder(rec, "r", question="q", version="3.12",
                             limits={"model_calls": 99})
        assert caught.value.code == "invalid_limits"
        run = AgentRunRecorder(rec, "r", question="q", version="3.12",
                               limits=trial("overwrite-agent-1")["result"]["limits"])
        with pytest.raises(InputError) as caught:
            run.proposed(["search"])
        assert caught.value.code == "non_object_decision"
        with pytest.raises(InputError) as caught:
            run.admitted(0)
        assert caught.value.code == "unknown_proposal"
        with pytest.raises(InputError) as caught:
            AgentRunRecorder(rec, "r", question="q", version="3.12",
                             limits=trial("overwrite-agent-1")["result"]["limits"])
        assert caught.value.code == "attempt_exists"
        decision = run.finished("incomplete", "model_stopped")
        assert decision.status == R.HELD  # a finish with no stop decision disagrees
