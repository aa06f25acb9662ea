"""Patterns that run over untrusted text: compiled, and refused when they could hang.

A repeat inside a repeat, like ``(a+)+``, can backtrack for longer than the universe on a
crafted answer.  Task rules (``projections.semantics``) and output contracts
(``contracts.model``) both compile user patterns that run over model text, so both refuse
that shape with the same codes (``invalid_pattern`` / ``unsafe_pattern``).  It lives here,
below both, so contracts need not import the projections that import them.
"""

from __future__ import annotations

import re
import re._constants as re_constants  # the stdlib's own regex parser, to inspect patterns
import re._parser as re_parser

from tracestore.errors import InputError


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
