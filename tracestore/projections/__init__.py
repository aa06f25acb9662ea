"""Pure projections: ordered ``StoredEvent`` sequences in, frozen views out.

No I/O, no clock, no database: the shell loads events and hands them over, so replay,
review and tests all call the same functions and get the same answers byte for byte.

The names below are loaded on first use (PEP 562): ``tracestore release`` needs the
release projection, not the destination audit or the agent-run judge (which
``release.JUDGES`` imports when an agent run is first judged).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "AttemptView": "attempt", "project_attempt": "attempt",
    "PROGRESS_TEXT": "destinations", "AttemptDestinations": "destinations",
    "AuditReport": "destinations", "DestinationEntry": "destinations",
    "Violation": "destinations", "audit": "destinations",
    "PROFILES": "profiles", "Profile": "profiles", "TerminalRule": "profiles",
    "profile_for": "profiles",
    "ReleaseDecision": "release", "ReleaseJudge": "release", "decide_all": "release",
    "decide_release": "release", "trace_attempts": "release",
    "Judgement": "semantics", "judge": "semantics", "judge_semantics": "semantics",
}

if TYPE_CHECKING:
    from tracestore.projections.attempt import AttemptView, project_attempt
    from tracestore.projections.destinations import (
        PROGRESS_TEXT, AttemptDestinations, AuditReport, DestinationEntry, Violation, audit,
    )
    from tracestore.projections.profiles import PROFILES, Profile, TerminalRule, profile_for
    from tracestore.projections.release import (
        ReleaseDecision, ReleaseJudge, decide_all, decide_release, trace_attempts,
    )
    from tracestore.projections.semantics import Judgement, judge, judge_semantics


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        if not name.startswith("_"):  # a submodule, as when this init imported them all
            try:
                return importlib.import_module(f"tracestore.projections.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"tracestore.projections.{name}":
                    raise
        raise AttributeError(f"module 'tracestore.projections' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tracestore.projections.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AttemptView", "project_attempt", "PROGRESS_TEXT", "AttemptDestinations", "AuditReport",
    "DestinationEntry", "Violation", "audit", "PROFILES", "Profile", "TerminalRule",
    "profile_for", "ReleaseDecision", "ReleaseJudge", "decide_all", "decide_release",
    "trace_attempts", "Judgement", "judge", "judge_semantics",
]
