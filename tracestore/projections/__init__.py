"""Pure projections: ordered ``StoredEvent`` sequences in, frozen views out.

No I/O, no clock, no database: the shell loads events and hands them over, so replay,
review and tests all call the same functions and get the same answers byte for byte.
"""

from tracestore.projections.attempt import AttemptView, project_attempt
from tracestore.projections.destinations import (
    PROGRESS_TEXT, AttemptDestinations, AuditReport, DestinationEntry, Violation, audit,
)
from tracestore.projections.profiles import PROFILES, Profile, TerminalRule, profile_for
from tracestore.projections.release import (
    ReleaseDecision, ReleaseJudge, decide_all, decide_release, trace_attempts,
)
from tracestore.projections.semantics import Judgement, judge, judge_semantics

# Registers the agent-run judge with ``release.JUDGES`` (this package init runs before any
# of its modules, so ``import tracestore.projections.release`` alone has it too).
from tracestore.projections import agent_release  # noqa: E402,F401  isort: skip

__all__ = [
    "AttemptView", "project_attempt", "PROGRESS_TEXT", "AttemptDestinations", "AuditReport",
    "DestinationEntry", "Violation", "audit", "PROFILES", "Profile", "TerminalRule",
    "profile_for", "ReleaseDecision", "ReleaseJudge", "decide_all", "decide_release",
    "trace_attempts", "Judgement", "judge", "judge_semantics",
]
