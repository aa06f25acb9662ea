"""Shared by the agent tests: seed 001's recorded report, planned and simulated (no database)."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from tracestore.agent.admission import Admission, rederive
from tracestore.ingest.agent import load_cases, plan_agent_ingest, simulate
from tracestore.agent.run import RunRecord, gather_run

AGENT = Path(__file__).resolve().parents[1] / "fixtures" / "agent"
REPORT = AGENT / "seed001-live-comparison.json"
CASES = AGENT / "cases.json"


@lru_cache(maxsize=1)
def report() -> dict[str, Any]:
    return json.loads(REPORT.read_text(encoding="utf-8"))


def trial(trial_id: str) -> dict[str, Any]:
    """A deep copy of one recorded trial, safe to mutate."""
    return copy.deepcopy(next(t for t in report()["trials"] if t["id"] == trial_id))


def cases() -> dict[str, Any]:
    return load_cases(CASES.read_bytes())


def events_of(value: dict[str, Any], *, with_cases: bool = True, **kw: Any) -> list[Any]:
    data = json.dumps(value).encode()
    plan = plan_agent_ingest(data, filename="run.json", cases=cases() if with_cases else None,
                             **kw)
    return simulate(plan.events)


def run_of(value: dict[str, Any], attempt: str | None = None) -> tuple[RunRecord, Admission]:
    events = events_of(value)
    attempt = attempt or value.get("id") or next(
        e.event.attempt_id for e in events if e.type == "attempt.started")
    run = gather_run(events, attempt)
    assert run is not None
    return run, rederive(run)
