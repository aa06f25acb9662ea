"""Issue 14, item 1's property: 20,000 mutated real captures, decode → plan → serialize →
append → verify → release → audit → review, and only the project's typed errors occur.

Sized for CI (one in-memory store, 200 plans per append transaction, every 5th stored case
projected); ``bench/fuzz_pipeline.py`` runs the long version over every fixture.
"""

from __future__ import annotations

import pytest
from pipeline_fuzz import HOSTILE, mutate, run_cases, seeds

#: A long run: `pytest -m slow` runs it, and so does .ci/run.
pytestmark = pytest.mark.slow

CASES = 20_000


def test_mutated_captures_are_stored_faithfully_or_refused_with_a_code() -> None:
    tally = run_cases(CASES, seed=14, batch=200, project_every=5, max_seed_bytes=8_000)
    assert tally.cases == CASES
    assert tally.crashes == []          # nothing but TracestoreError, at any stage
    assert tally.unstorable == []       # what decodes, the store stores
    assert tally.verify_failures == []  # and the log verifies after every batch
    # Not vacuous: many cases go all the way through, many are refused for many reasons.
    assert tally.planned > CASES // 5 and tally.projected > tally.planned // 6
    assert len(tally.refused) >= 6


def test_the_mutator_reaches_the_seams() -> None:
    import random

    rng = random.Random(1)
    corpus = seeds(8_000)
    assert len(corpus) >= 20
    outputs = [mutate(rng, data) for _, data in corpus for _ in range(20)]
    assert sum(any(h in out for h in HOSTILE[:6]) for out in outputs) > len(outputs) // 10
