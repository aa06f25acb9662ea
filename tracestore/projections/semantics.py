"""Semantic acceptance: the task's rule (data) applied to a candidate answer.

The rule travels with the trace (``TraceOpened.task``), so what "correct" means for a task
is reviewable data, never Python.  Matching is case-insensitive on NFC-normalised text
(both the text and the patterns are normalised), so a composed and a decomposed "é" agree.
Acceptance never requires one exact string: the rule lists facts that must be present and
statements that must be absent.
"""

from __future__ import annotations

import hashlib
import re
import re._constants as re_constants  # the stdlib's own regex parser, to inspect patterns
import re._parser as re_parser
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from tracestore.errors import InputError
from tracestore.events import TaskRule

Verdict = Literal["accepted", "rejected"]


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on one candidate text, with the patterns that decided a rejection."""

    verdict: Verdict
    failed_patterns: tuple[str, ...]
    "Answer patterns that did not match, then forbidden patterns that did."
    answer_sha256: str


def sha256_text(text: str) -> str:
    # surrogatepass: an answer may hold a lone surrogate a provider sent as half an emoji;
    # for every other text this is plain UTF-8.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def normalize(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(normalize(pattern), re.IGNORECASE)
    except re.error as exc:
        raise InputError(f"semantic pattern {pattern!r} is not a valid regular expression: "
                         f"{exc}", code="invalid_pattern", pattern=pattern) from exc
    if _nested_unbounded_repeat(re_parser.parse(normalize(pattern))):
        # Patterns run over untrusted model text; a repeat inside a repeat, like (a+)+,
        # can backtrack for longer than the universe on a crafted answer.  Refuse them.
        raise InputError(f"semantic pattern {pattern!r} repeats a repeated group (like "
                         "(a+)+), which can take exponential time on hostile text; rewrite it",
                         code="unsafe_pattern", pattern=pattern)
    return compiled


def check_pattern(pattern: str, what: str = "pattern") -> re.Pattern[str]:
    """Compile a case-sensitive pattern that will run over untrusted text, refusing the
    same unsafe shapes as task rules (``invalid_pattern`` / ``unsafe_pattern``)."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise InputError(f"{what} {pattern!r} is not a valid regular expression: {exc}",
                         code="invalid_pattern", pattern=pattern) from exc
    if _nested_unbounded_repeat(re_parser.parse(pattern)):
        raise InputError(f"{what} {pattern!r} repeats a repeated group (like (a+)+), which "
                         "can take exponential time on hostile text; rewrite it",
                         code="unsafe_pattern", pattern=pattern)
    return compiled


_REPEATS = (re_constants.MAX_REPEAT, re_constants.MIN_REPEAT)


def _nested_unbounded_repeat(parsed: object, inside_repeat: bool = False) -> bool:
    """True when an unbounded repeat sits inside another unbounded repeat."""
    for op, av in parsed:  # type: ignore[attr-defined]
        if op in _REPEATS:
            _min, high, sub = av
            unbounded = high == re_constants.MAXREPEAT
            if unbounded and inside_repeat:
                return True
            if _nested_unbounded_repeat(sub, inside_repeat or unbounded):
                return True
        elif op == re_constants.SUBPATTERN:
            if _nested_unbounded_repeat(av[-1], inside_repeat):
                return True
        elif op in (re_constants.ASSERT, re_constants.ASSERT_NOT):
            if _nested_unbounded_repeat(av[1], inside_repeat):
                return True
        elif op == re_constants.BRANCH:
            if any(_nested_unbounded_repeat(b, inside_repeat) for b in av[1]):
                return True
    return False


def validate_rule(rule: TaskRule) -> None:
    """Compile every pattern now, so a bad rule fails at input time, not mid-replay."""
    for pattern in (*rule.answer_patterns, *rule.forbidden_patterns):
        _compile(pattern)


def judge_semantics(rule: TaskRule, text: str) -> tuple[Verdict, tuple[str, ...]]:
    """``("accepted", ())`` when all answer patterns match and no forbidden one does."""
    subject = normalize(text)
    missing = [p for p in rule.answer_patterns if not _compile(p).search(subject)]
    forbidden = [p for p in rule.forbidden_patterns if _compile(p).search(subject)]
    failed = tuple(missing + forbidden)
    return ("rejected" if failed else "accepted"), failed


def judge(rule: TaskRule, text: str) -> Judgement:
    verdict, failed = judge_semantics(rule, text)
    return Judgement(verdict, failed, sha256_text(text))
