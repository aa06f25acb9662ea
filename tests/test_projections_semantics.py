"""Semantic acceptance: the seed 003 task rule as data, matched case-insensitively on NFC."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from tracestore.errors import InputError
from tracestore.events import TaskRule
from tracestore.projections.semantics import judge, judge_semantics, validate_rule

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
RULE = TaskRule.model_validate(json.loads((FIXTURES / "t1.json").read_text())["task"])


def test_every_fixture_carries_the_same_rule() -> None:
    for path in FIXTURES.glob("*.json"):
        assert TaskRule.model_validate(json.loads(path.read_text())["task"]) == RULE, path.name


@pytest.mark.parametrize("text", [
    "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday.",
    "Wednesday: 09:00–17:00 UTC. Thursday: closed.",
    "THE DESK IS OPEN ON WEDNESDAY, 9:00 TO 17:00 UTC, AND CLOSED ON THURSDAY.",
    "Open Wednesday 9 am to 5 pm (UTC); closed Thursday.",
    "It is closed Thursday; on Wednesday it opens 09:00-17:00 UTC.",
])
def test_faithful_phrasings_are_accepted(text: str) -> None:
    assert judge_semantics(RULE, text) == ("accepted", ())


@pytest.mark.parametrize("text", [
    "The desk opens Thursday.",                                              # T5
    "The public desk opens Wednesday from 09:00 to 17:00 UTC.",             # Thursday lost
    "The public desk opens Wednesday from 09:00 to 17:00. Closed Thursday.",  # UTC lost
    "Open Wednesday 09:00–17:00 UTC and Thursday 10:00–12:00 UTC; closed Friday.",
    "Wednesday 09:00–18:00 UTC; closed Thursday.",                          # invented hour
    "Wednesday 09:00–17:00 UTC, also 7 pm; closed Thursday.",
    "Open Wednesday 09:00-17:00 UTC. Thursday: open from noon, otherwise closed.",
    "Wednesday and Thursday 09:00 to 17:00 UTC, closed weekends.",
])
def test_unfaithful_phrasings_are_rejected(text: str) -> None:
    verdict, failed = judge_semantics(RULE, text)
    assert verdict == "rejected" and failed


def test_t5_fails_answer_and_forbidden_patterns_in_rule_order() -> None:
    verdict, failed = judge_semantics(RULE, "The desk opens Thursday.")
    assert verdict == "rejected"
    missing = [p for p in RULE.answer_patterns if p in failed]
    forbidden = [p for p in RULE.forbidden_patterns if p in failed]
    assert failed == tuple(missing + forbidden)
    assert len(missing) == 5 and forbidden == [r"\bopens?\s+(?:on\s+)?thursdays?\b"]


def test_matching_is_nfc_normalised_on_both_sides() -> None:
    rule = TaskRule(answer_patterns=(unicodedata.normalize("NFD", "café"),))
    assert judge_semantics(rule, unicodedata.normalize("NFC", "Le Café ouvre"))[0] == "accepted"
    assert judge_semantics(rule, unicodedata.normalize("NFD", "LE CAFÉ"))[0] == "accepted"


def test_judgement_carries_the_answer_hash() -> None:
    j = judge(RULE, "x")
    assert j.answer_sha256 == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"


def test_invalid_pattern_is_input_error() -> None:
    with pytest.raises(InputError) as info:
        validate_rule(TaskRule(answer_patterns=("(unclosed",)))
    assert info.value.code == "invalid_pattern"


@pytest.mark.parametrize("pattern", ["(a+)+$", "(\\w+\\s?)*x", "(ab|c+)*", "(?=(a*)*b)"])
def test_patterns_that_can_backtrack_exponentially_are_refused(pattern: str) -> None:
    from tracestore.errors import InputError
    from tracestore.projections.semantics import validate_rule

    with pytest.raises(InputError) as caught:
        validate_rule(TaskRule(answer_patterns=(pattern,)))
    assert caught.value.code == "unsafe_pattern"


@pytest.mark.parametrize("pattern", ["a+b+", "(a|b)+", "(?:\\d{2}:\\d{2})+", "x{1,3}(y+)"])
def test_ordinary_repeats_are_fine(pattern: str) -> None:
    from tracestore.projections.semantics import validate_rule

    validate_rule(TaskRule(answer_patterns=(pattern,)))
