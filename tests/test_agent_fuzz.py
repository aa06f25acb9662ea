"""Mutated agent files (random values at random places) raise only typed errors, through
plan, re-derivation, grading, release, audit and review."""

from __future__ import annotations

import copy
import json
import random
from typing import Any, Iterator

import pytest

from agenthelp import cases, report
from tracestore.agent.grading import grade
from tracestore.ingest.agent import plan_agent_ingest, simulate
from tracestore.agent.run import agent_runs
from tracestore.errors import TracestoreError
from tracestore.projections import decide_release
from tracestore.projections.destinations import audit
from tracestore.review.context import build_context
from tracestore.review.derivers import get_deriver

VALUES = [None, 0, -1, 7, 1.5, True, "", "x", "search", "read", "answer", "stop", [], {},
          [1], {"a": 1}, "path-write", 10**9]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, prefix + (index,))


def _mutate(rng: random.Random, trial: dict[str, Any]) -> None:
    places = [p for p in _paths(trial) if p]
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(places)
        node: Any = trial
        try:
            for key in path[:-1]:
                node = node[key]
            if rng.random() < 0.2 and isinstance(node, dict):
                node.pop(path[-1], None)
            else:
                node[path[-1]] = rng.choice(VALUES)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed this place


@pytest.mark.parametrize("seed", range(4))
def test_mutated_trials_raise_only_typed_errors(seed: int) -> None:
    rng = random.Random(seed)
    known = cases()
    for _ in range(60):
        trial = copy.deepcopy(rng.choice(report()["trials"]))
        _mutate(rng, trial)
        try:
            plan = plan_agent_ingest(json.dumps(trial).encode(), filename="f.json",
                                     cases=known)
        except TracestoreError:
            continue
        events = simulate(plan.events)
        for run in agent_runs(events):
            grade(run, known.get(run.opened.case_id or ""))
            decide_release(events, run.attempt_id)
            ctx = build_context(events, run.attempt_id, template="trace-review", version="t")
            for name in ("authority", "candidate", "evidence_gap"):
                get_deriver(name)(ctx)
        audit(events)
