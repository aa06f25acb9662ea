"""Semantic acceptance: the task's rule (data) applied to a candidate answer.

The rule travels with the trace (``TraceOpened.task``), so what "correct" means for a task
is reviewable data, never Python.  Matching is case-insensitive on NFC-normalised text
(both the text and the patterns are normalised), so a composed and a decomposed "é" agree.
Acceptance never requires one exact string: the rule lists facts that must be present and
statements that must be absent.

Bounded time: patterns are user data running over untrusted model text.
They are matched with the ``regex`` engine and its ``timeout``, so no pattern can hang the
judge; a search that runs past ``MATCH_TIMEOUT`` seconds is recorded as timed out
(``Judgement.timed_out``; the release is held with ``rule_timeout``, never released).
Rules are also checked when loaded (``validate_rule``): besides the refused shapes (a
repeat inside a repeat), each pattern must finish on a few adversarial probe texts within
``PROBE_TIMEOUT``, else ``unsafe_pattern``.  A timeout depends on the machine, so the load
check is the rule's real bound; the match timeout is the safety net that keeps a pattern
that is slow only on one huge answer (``\\bparis\\b.*\\bfrance\\b`` over 100k words) from
hanging anything.
"""

from __future__ import annotations

import hashlib
import re
import re._parser as re_parser
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from tracestore.errors import InputError
from tracestore.events import TaskRule
# Pattern safety is shared with contracts (below us): it lives in tracestore.text.patterns.
from tracestore.text.patterns import _nested_unbounded_repeat, check_pattern  # noqa: F401

Verdict = Literal["accepted", "rejected"]

#: Longest one pattern may search one text, in seconds (the ``regex`` engine's timeout).
MATCH_TIMEOUT = 1.0
#: Longest a pattern may take on one probe text when a rule is loaded.
PROBE_TIMEOUT = 0.25
#: Texts that make backtracking patterns blow up: runs of one letter (with and without an
#: ending that fails the match), repeated words, repeated separators.
PROBES = ("a" * 30, "a" * 30 + "!", "a" * 5000 + "!", "paris " * 300 + "!", "a," * 60,
          "x" * 200 + " " * 200 + "x!", "0" * 60 + "!")


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on one candidate text, with the patterns that decided a rejection."""

    verdict: Verdict
    failed_patterns: tuple[str, ...]
    "Answer patterns that did not match, then forbidden patterns that did."
    answer_sha256: str
    timed_out: tuple[str, ...] = ()
    "Patterns whose search ran past ``MATCH_TIMEOUT`` (also listed in failed_patterns)."


_HASH_SLICE = 1 << 20
"Characters encoded at a time by ``sha256_text``: a long answer is never copied whole."


def sha256_text(text: str) -> str:
    """The SHA-256 of ``text``'s UTF-8 bytes.  A long answer is encoded a slice at a time
    (UTF-8 encodes each code point on its own, so the slices' bytes are the whole text's):
    hashing a 256 MiB answer used to hold a second, encoded copy of it."""
    # surrogatepass: an answer may hold a lone surrogate a provider sent as half an emoji;
    # for every other text this is plain UTF-8.
    if len(text) <= _HASH_SLICE:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    digest = hashlib.sha256()
    for start in range(0, len(text), _HASH_SLICE):
        digest.update(text[start:start + _HASH_SLICE].encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def normalize(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@lru_cache(maxsize=512)
def _compile(pattern: str) -> Any:
    import regex  # only when a rule is judged: reading decisions does not load it

    try:
        re.compile(normalize(pattern), re.IGNORECASE)  # the syntax rules always accepted
        compiled = regex.compile(normalize(pattern), regex.IGNORECASE | regex.VERSION0)
    except (re.error, regex.error) as exc:
        raise InputError(f"semantic pattern {pattern!r} is not a valid regular expression: "
                         f"{exc}", code="invalid_pattern", pattern=pattern) from exc
    if _nested_unbounded_repeat(re_parser.parse(normalize(pattern))):
        # Patterns run over untrusted model text; a repeat inside a repeat, like (a+)+,
        # can backtrack for longer than the universe on a crafted answer.  Refuse them.
        raise InputError(f"semantic pattern {pattern!r} repeats a repeated group (like "
                         "(a+)+), which can take exponential time on hostile text; rewrite it",
                         code="unsafe_pattern", pattern=pattern)
    return compiled


def validate_rule(rule: TaskRule) -> None:
    """Compile every pattern now, so a bad rule fails at input time, not mid-replay, and
    run it over ``PROBES``: a pattern that cannot finish one in ``PROBE_TIMEOUT`` is
    ``unsafe_pattern``."""
    for pattern in (*rule.answer_patterns, *rule.forbidden_patterns):
        _probe(pattern)


@lru_cache(maxsize=512)
def _probe(pattern: str) -> None:
    compiled = _compile(pattern)
    for probe in PROBES:
        try:
            compiled.search(probe, timeout=PROBE_TIMEOUT)
        except TimeoutError:
            raise InputError(f"semantic pattern {pattern!r} runs longer than {PROBE_TIMEOUT}s "
                             f"on a {len(probe)}-character probe text (catastrophic "
                             "backtracking); rewrite it", code="unsafe_pattern",
                             pattern=pattern) from None


def _search(pattern: str, subject: str) -> bool | None:
    """Whether ``pattern`` is found in ``subject``; None when the search timed out."""
    try:
        return _compile(pattern).search(subject, timeout=MATCH_TIMEOUT) is not None
    except TimeoutError:
        return None


def _evaluate(rule: TaskRule, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(failed patterns: missing answers, present forbidden, timed out; the timed out)."""
    subject = normalize(text)
    missing: list[str] = []
    forbidden: list[str] = []
    timed_out: list[str] = []
    for pattern in rule.answer_patterns:
        hit = _search(pattern, subject)
        (timed_out if hit is None else missing if not hit else []).append(pattern)
    for pattern in rule.forbidden_patterns:
        hit = _search(pattern, subject)
        (timed_out if hit is None else forbidden if hit else []).append(pattern)
    return tuple(missing + forbidden + timed_out), tuple(timed_out)


def judge_semantics(rule: TaskRule, text: str) -> tuple[Verdict, tuple[str, ...]]:
    """``("accepted", ())`` when all answer patterns match and no forbidden one does (a
    pattern that timed out counts as failed)."""
    failed, _ = _evaluate(rule, text)
    return ("rejected" if failed else "accepted"), failed


def judge(rule: TaskRule, text: str) -> Judgement:
    failed, timed_out = _evaluate(rule, text)
    return Judgement("rejected" if failed else "accepted", failed, sha256_text(text),
                     timed_out)
