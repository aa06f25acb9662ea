"""Ingest's decision folded from the plan's own observations equals the judge's.

A fast-path projection lends each frame's observations (made once, by the planner's
normalizer) to the decision tap, which folds them without a model per frame and without
normalizing again (``tracestore.ingest.decide``).  The reference is the same ingest with
that route switched off (every frame rebuilt as a model and re-normalized by the judge),
and the release projection recomputed from the stored log: both must give exactly the
same events, byte for byte, and the same decision.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracestore.errors import InputError, WireError
from tracestore.events import TaskRule
from tracestore.ingest import decide, plan_ingest
from tracestore.ingest.pipeline import append_plan
from tracestore.ingest.projection import projection_api_of
from tracestore.projections.release import decide_release
from tracestore.store.log import EventStore

ROOT = Path(__file__).resolve().parent.parent
FAST_APIS = ("openai-responses", "bedrock-converse-stream")
ENDINGS = {"clean": [{"local": "drain", "outcome": "clean"}],
           "reset": [{"local": "drain", "outcome": "reset", "detail": "x"}],
           "stop": [{"local": "stop", "by": "user"}, {"local": "drain", "outcome": "clean"}],
           "open": []}


def _natives(folder: str, every: int = 1) -> list[tuple[str, list]]:
    """Each capture of the fast APIs under ``fixtures/<folder>`` (every ``every``-th one)
    as its native objects."""
    from tracestore.providers.capture import read_capture

    out = []
    paths = [p for p in sorted((ROOT / "fixtures" / folder).rglob("*"))
             if p.is_file() and p.suffix not in (".md", ".jsonl") and ".binding." not in p.name]
    for path in paths[::every]:
        try:
            reading = read_capture(path.read_bytes(), filename=path.name)
        except (InputError, WireError):
            continue
        if reading.provider in FAST_APIS and reading.frames and all(
                projection_api_of(f.native) == reading.provider for f in reading.frames):
            out.append((f"{folder}/{path.name}", [f.native for f in reading.frames]))
    return out


CAPTURES = _natives("real") + _natives("synthetic") + _natives("wild", every=8)
CASES = [(f"{name}+{ending}", natives + ENDINGS[ending])
         for name, natives in CAPTURES for ending in ENDINGS
         if ending == "clean" or name.startswith("real/")]
TASK = TaskRule(answer_patterns=("the",))


def _ingest(data: bytes, *, lean: bool, monkeypatch: pytest.MonkeyPatch,
            task: TaskRule | None = None) -> tuple[list[tuple], object, int]:
    """The log (ids, streams, types, payloads) an ingest writes, its tap, and how many
    frame models the tap built."""
    taps, models = [], [0]
    real_init, real_model = decide.PlanDecisions.__init__, decide._model_of

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        taps.append(self)

    def model_of(new):
        models[0] += 1
        return real_model(new)

    with monkeypatch.context() as m:
        m.setattr(decide.PlanDecisions, "__init__", init)
        m.setattr(decide, "_model_of", model_of)
        if not lean:
            m.setattr(decide.PlanDecisions, "_lean_judge", lambda *a: None)
        plan = plan_ingest(data, filename="case.json", task=task)
        assert plan.kind == "projection"
        with EventStore("sqlite://") as store:
            append_plan(store, plan)
            log = [(e.position, e.id, e.stream, e.type, e.event.model_dump())
                   for e in store.read()]
            recomputed = decide_release(store.read(trace_id=plan.trace_id), plan.attempt_id)
    recorded = [r[4] for r in log if r[3] == "release.decided"]
    if recomputed.decided_at_position is None:  # not final yet: nothing is recorded
        assert recorded == []
    else:
        (got,) = recorded
        assert (got["status"], tuple(got["reasons"]), got["decided_at_position"]) == (
            recomputed.status, recomputed.reasons, recomputed.decided_at_position)
    return log, taps[0], models[0]


def test_there_are_real_and_wild_captures_of_both_apis() -> None:
    names = [n for n, _ in CAPTURES]
    assert sum(n.startswith("real/") for n in names) >= 10
    assert sum(n.startswith("wild/") for n in names) >= 3


@pytest.mark.parametrize("name, natives", CASES, ids=[c[0] for c in CASES])
def test_the_lean_decision_equals_the_judges(name: str, natives: list,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.dumps(natives, ensure_ascii=False).encode()
    lean_log, lean_tap, lean_models = _ingest(data, lean=True, monkeypatch=monkeypatch)
    ref_log, ref_tap, ref_models = _ingest(data, lean=False, monkeypatch=monkeypatch)
    assert lean_log == ref_log
    frames = sum(1 for r in ref_log if r[3] == "frame.received")
    # Structural: the lean route folded every frame from the plan, no model was built.
    assert lean_tap._lean and not lean_tap._unsure and lean_models == 0
    assert ref_models == frames and not ref_tap._lean


@pytest.mark.parametrize("name, natives", [c for c in CAPTURES if c[0].startswith("real/")],
                         ids=[c[0] for c in CAPTURES if c[0].startswith("real/")])
def test_the_lean_decision_equals_the_judges_under_a_task_rule(
        name: str, natives: list, monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.dumps(natives + ENDINGS["clean"], ensure_ascii=False).encode()
    lean_log, _, _ = _ingest(data, lean=True, monkeypatch=monkeypatch, task=TASK)
    ref_log, _, _ = _ingest(data, lean=False, monkeypatch=monkeypatch, task=TASK)
    assert lean_log == ref_log


def test_a_frame_without_observations_decides_from_a_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A lone surrogate: the serializer refuses the payload and the plan yields a model,
    # which lends no observations; the trace is then decided from a read of the log.
    natives = [{"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
               {"type": "response.output_text.delta", "delta": "a", "output_index": 0,
                "content_index": 0},
               {"type": "response.output_text.delta", "delta": "\ud83d", "output_index": 0,
                "content_index": 0},
               {"local": "drain", "outcome": "clean"}]
    data = json.dumps(natives).encode()
    lean_log, tap, _ = _ingest(data, lean=True, monkeypatch=monkeypatch)
    ref_log, _, _ = _ingest(data, lean=False, monkeypatch=monkeypatch)
    assert lean_log == ref_log
    assert len(tap._unsure) == 1
