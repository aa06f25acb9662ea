"""The deriver registry, complete: importing this module registers every deriver.

Templates name derivers by these keys; ``tracestore templates`` lists them.  Adding a
deriver is a function with ``@deriver("name")`` in a ``derive_*`` module, imported here.
"""

from __future__ import annotations

from tracestore.review import derive_attempt, derive_review, derive_trace  # noqa: F401  (registers)
from tracestore.review import conflicts  # noqa: F401  (registers the conflict checks)
from tracestore.review.context import CONFLICT_CHECKS, DERIVERS, ConflictCheck, Deriver


def get_deriver(name: str) -> Deriver | None:
    return DERIVERS.get(name)


def get_conflict_check(name: str) -> ConflictCheck | None:
    return CONFLICT_CHECKS.get(name)


def deriver_names() -> list[str]:
    return sorted(DERIVERS)


def describe(name: str) -> str:
    """The first paragraph of a deriver's docstring, on one line: what it derives.

    A paragraph, not the first line: a summary wrapped in the source must not be cut off
    mid-sentence in ``tracestore templates``."""
    doc = (DERIVERS[name].__doc__ or "").strip()
    return " ".join(doc.split("\n\n", 1)[0].split())
