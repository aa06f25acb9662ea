"""Destinations and audit: which destination holds which answer, and what broke the policy.

Policy (seed 003): before release only the fixed progress text may be shown; on release the
answer goes to the UI, ONE history entry, export and copy — once.  History holds one answer
per turn (trace): a retry released after the turn's answer was already released replaces
that entry (its history write is the replacement, not a second entry).  ``destination.written``
events record every write, whether the replay harness made it by following the policy or a
real application's log was recorded (``source="application"``).  The audit compares those
writes with the release decisions recomputed from the same log, so a buggy application
(a second history entry, old text appended to a retry) is caught by evidence, not trust.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from tracestore.events import ANSWER_DESTINATIONS, AttemptStarted, StoredEvent
from tracestore.projections import reasons as R
from tracestore.projections.attempt import AttemptView
from tracestore.projections.release import ReleaseDecision, ReleaseJudge, trace_attempts

if TYPE_CHECKING:  # events.more_models: the kinds are told apart by their type strings,
    # so reading a log without destination events never defines those models.
    from tracestore.events import DestinationWritten

#: The only text a destination may show before release (what the replay harness writes).
PROGRESS_TEXT: Final = "Generating answer…"

#: Old-attempt fragments shorter than this are not searched for: a stray "." or "The" in a
#: new answer proves nothing.  Whole old block texts are always searched.
MIN_FRAGMENT_CHARS: Final = 8


@dataclass(frozen=True, slots=True)
class DestinationEntry:
    text: str
    sha256: str
    position: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "sha256": self.sha256, "position": self.position,
                "source": self.source}


@dataclass(frozen=True, slots=True)
class AttemptDestinations:
    attempt_id: str
    trace_id: str
    destinations: Mapping[str, tuple[DestinationEntry, ...]]
    "ui, history, export, copy → every write, in position order."
    progress: tuple[DestinationEntry, ...]
    decision: ReleaseDecision

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt_id": self.attempt_id, "trace_id": self.trace_id,
            "status": self.decision.status,
            "destinations": {d: [e.to_dict() for e in self.destinations[d]]
                             for d in ANSWER_DESTINATIONS},
            "progress": [e.to_dict() for e in self.progress],
        }


@dataclass(frozen=True, slots=True)
class Violation:
    code: str
    attempt_id: str
    destination: str
    position: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "attempt_id": self.attempt_id,
                "destination": self.destination, "position": self.position,
                "message": self.message}


@dataclass(frozen=True, slots=True)
class AuditReport:
    attempts: tuple[AttemptDestinations, ...]
    violations: tuple[Violation, ...] = field(default=())
    views: Mapping[str, AttemptView] = field(default_factory=dict, compare=False, repr=False)
    "Attempt id → the view its decision was judged on (review records reuse it)."
    observed: Mapping[str, Mapping[int, Any]] = field(default_factory=dict, compare=False,
                                                      repr=False)
    "``audit(observe=True)``: attempt id → frame position → the normalizer's observations."

    def to_dict(self) -> dict[str, Any]:
        return {"attempts": [a.to_dict() for a in self.attempts],
                "violations": [v.to_dict() for v in self.violations]}


@dataclass(frozen=True, slots=True)
class _Judged:
    view: AttemptView
    decision: ReleaseDecision
    findings: tuple[Any, ...] = ()
    "Violations the judge found itself (an agent run's admission disagreements)."
    observed: Mapping[int, Any] | None = None


def _judge_all(events: Sequence[StoredEvent], trace_id: str | None,
               observe: bool = False) -> dict[str, _Judged]:
    """Judge each attempt on its own trace's events only (a decision never reads another
    trace), so auditing a whole log is one pass per trace, not one per attempt."""
    trace_of = {e.event.attempt_id: e.event.trace_id for e in events
                if isinstance(e.event, AttemptStarted)}
    groups: dict[str | None, list[StoredEvent]] = {}
    for stored in events:
        key = stored.trace_id or trace_of.get(stored.attempt_id or "")
        groups.setdefault(key, []).append(stored)
    judged: dict[str, _Judged] = {}
    for attempt_id in trace_attempts(events, trace_id):
        mine = groups.get(trace_of[attempt_id], [])
        judge = ReleaseJudge.for_attempt(mine, attempt_id)
        if observe:
            judge.fold.observed = {}
        for stored in mine:
            judge.feed(stored)
        judged[attempt_id] = _Judged(judge.view(), judge.decision(), judge.findings(),
                                     judge.fold.observed)
    return judged


def _writes(events: Sequence[StoredEvent], attempts: Mapping[str, _Judged]
            ) -> list[tuple[int, DestinationWritten]]:
    return [(e.position, e.event) for e in events
            if e.event.type == "destination.written" and e.event.attempt_id in attempts]


def audit(events: Sequence[StoredEvent], *, trace_id: str | None = None,
          observe: bool = False) -> AuditReport:
    """Per attempt, what each destination holds; and every policy violation found.
    ``observe``: keep each frame's observations (``AuditReport.observed``, the trace page)."""
    judged = _judge_all(events, trace_id, observe)
    writes = _writes(events, judged)
    report = []
    for attempt_id, j in judged.items():
        mine = [(p, w) for p, w in writes if w.attempt_id == attempt_id]
        dests = {d: tuple(_entry(p, w) for p, w in mine if w.destination == d)
                 for d in ANSWER_DESTINATIONS}
        progress = tuple(_entry(p, w) for p, w in mine if w.destination == "progress")
        report.append(AttemptDestinations(attempt_id, j.view.trace_id, dests, progress,
                                          j.decision))
    owners = _text_owners(judged)
    found = (_violations(writes, judged, owners) + _readback_violations(events, judged)
             + _missing_write_violations(writes, judged, owners)
             + [f for j in judged.values() for f in j.findings])
    return AuditReport(tuple(report), tuple(sorted(found, key=lambda v: v.position)),
                       {a: j.view for a, j in judged.items()},
                       {a: j.observed for a, j in judged.items() if j.observed is not None})


def _entry(position: int, write: DestinationWritten) -> DestinationEntry:
    return DestinationEntry(write.text, write.sha256, position, write.source)


def _violations(writes: list[tuple[int, DestinationWritten]],
                judged: Mapping[str, _Judged], owners: _Owners) -> list[Violation]:
    found: list[Violation] = []
    seen: Counter[tuple[str, str]] = Counter()  # (attempt, destination) → writes
    history: dict[str, str] = {}  # trace → the attempt whose answer its history entry holds
    for position, write in writes:
        whose = _owner_of_text(write, judged, owners)
        j = judged[whose]

        def flag(code: str, message: str) -> None:
            found.append(Violation(code, whose, write.destination, position, message))

        if whose != write.attempt_id:
            flag(R.MISATTRIBUTED_DESTINATION_WRITE,
                 f"recorded on attempt {write.attempt_id!r}, but holds exactly the text of "
                 f"{whose!r}: judged as {whose!r}'s write")
        if write.shown_as == "cut_off":
            _check_cut_off(j, position, write, flag)
            continue
        if write.destination == "progress":
            if write.text != PROGRESS_TEXT:
                flag(R.PROGRESS_NOT_FIXED, "progress shows text other than the fixed string")
            continue
        _check_release(j.decision, position, write, flag)
        _check_old_text(j, judged, write.text, flag)
        if write.destination == "history":
            owner = history.get(j.view.trace_id)
            if owner is not None and not _replaces(j, judged[owner]):
                flag(R.DUPLICATE_HISTORY_ENTRY,
                     f"the trace's history already holds the entry of {owner!r}")
            else:
                history[j.view.trace_id] = whose
            continue
        seen[(whose, write.destination)] += 1
        if seen[(whose, write.destination)] > 1:
            flag(R.REPEATED_DESTINATION_WRITE,
                 f"write #{seen[(whose, write.destination)]} to {write.destination}")
    return found


def _readback_violations(events: Sequence[StoredEvent],
                         judged: Mapping[str, _Judged]) -> list[Violation]:
    """What an application read back from a destination, against the decision: a released
    attempt's destinations hold its answer; anything else holds at most the progress text."""
    found: list[Violation] = []
    for stored in events:
        read = stored.event
        if read.type != "destination.read_back" or read.attempt_id not in judged:
            continue
        j = judged[read.attempt_id]

        def flag(code: str, message: str) -> None:
            found.append(Violation(code, read.attempt_id, read.destination, stored.position,
                                   message))

        decision = j.decision
        released = decision.eligible and (decision.decided_at_position or 0) < stored.position
        if released and read.destination != "progress":
            if read.text != decision.answer:
                flag(R.READBACK_MISMATCH, "read back other text than the released answer")
        elif read.text not in ("", PROGRESS_TEXT):
            code = R.READBACK_MISMATCH if decision.eligible else R.INELIGIBLE_TEXT_IN_DESTINATION
            flag(code, f"read back text while the attempt is {decision.status}")
        _check_old_text(j, judged, read.text, flag)
    return found


def _replaces(newer: _Judged, owner: _Judged) -> bool:
    """Whether ``newer``'s history write replaces ``owner``'s entry (one answer per turn).

    Only a released retry opened after the owner's answer was released replaces it: the
    user asked again for an answer they had already been given, and history keeps the newest
    answer of the turn.  A second write by the same attempt, or by an attempt that was
    never released, stays a duplicate.
    """
    released_at = owner.decision.decided_at_position
    return (newer.view.attempt_id != owner.view.attempt_id and newer.decision.eligible
            and owner.decision.eligible and released_at is not None
            and newer.view.started_at > released_at)


def _check_release(decision: ReleaseDecision, position: int, write: DestinationWritten,
                   flag: Any) -> None:
    if not decision.eligible:
        flag(R.INELIGIBLE_TEXT_IN_DESTINATION,
             f"attempt is {decision.status}, yet {write.destination} received its text")
    elif decision.decided_at_position is not None and position < decision.decided_at_position:
        flag(R.SHOWN_BEFORE_RELEASE,
             f"written at {position}, released at {decision.decided_at_position}")
    elif write.text != decision.answer:
        flag(R.ANSWER_MISMATCH, "text differs from the released answer")


_Owners = Mapping[tuple[str, str], tuple[str, ...]]
"(trace, candidate text) -> the attempts whose candidate it is (built once per audit)."


def _text_owners(judged: Mapping[str, _Judged]) -> _Owners:
    owners: dict[tuple[str, str], tuple[str, ...]] = {}
    for attempt_id, j in judged.items():
        if j.view.text:
            key = (j.view.trace_id, j.view.text)
            owners[key] = (*owners.get(key, ()), attempt_id)
    return owners


def _owner_of_text(write: DestinationWritten, judged: Mapping[str, _Judged],
                   owners: _Owners) -> str:
    """The attempt whose text ``write`` holds, whichever attempt it was recorded on.

    An application that routes writes through "the current attempt" (the bug T8 exists to
    catch) records a retry's answer on the old attempt, or the old partial on the new one.
    When the text differs from the recorded attempt's own candidate and equals exactly one
    other attempt's candidate in the same trace, the write is that attempt's: it is judged
    against that attempt's decision, so the audit blames the attempt whose text leaked.
    """
    mine = judged[write.attempt_id]
    if write.destination == "progress" or not write.text or write.text == mine.view.text:
        return write.attempt_id
    others = [a for a in owners.get((mine.view.trace_id, write.text), ())
              if a != write.attempt_id]
    return others[0] if len(others) == 1 else write.attempt_id


def _check_cut_off(j: _Judged, position: int, write: DestinationWritten, flag: Any) -> None:
    """Release policy: a stopped attempt's partial text may be shown on the UI marked as cut
    off — exactly that and nothing more: the UI only, after the Stop, a non-empty prefix of
    what the attempt had delivered (never the late text that arrived after the Stop)."""
    view, decision = j.view, j.decision
    if write.destination != "ui":
        flag(R.CUT_OFF_WRITE_NOT_ALLOWED, f"{write.destination} may not hold a cut-off answer")
    elif decision.status != R.STOPPED or view.stop_position is None:
        flag(R.CUT_OFF_WRITE_NOT_ALLOWED,
             f"marked as cut off, but the attempt is {decision.status}, not stopped")
    elif position < view.stop_position:
        flag(R.CUT_OFF_WRITE_NOT_ALLOWED, f"shown as cut off at {position}, before the Stop "
             f"at {view.stop_position}")
    elif not write.text or write.text != _text_before(view, view.stop_position)[:len(write.text)]:
        flag(R.CUT_OFF_WRITE_NOT_ALLOWED,
             "the cut-off text is not a prefix of what the attempt delivered before its Stop")


def _text_before(view: AttemptView, position: int) -> str:
    """The candidate as it stood at ``position``: deltas recorded before it, block by block."""
    parts: list[str] = []
    for block in view.blocks:
        parts.extend(d for d, at in zip(block.deltas, block.positions) if at < position)
    return "".join(parts)


def _check_old_text(j: _Judged, judged: Mapping[str, _Judged], text: str, flag: Any) -> None:
    """Old text counts only where the destination holds it MORE often than this attempt's
    own candidate does: a retry may legitimately repeat the old attempt's words."""
    own = j.view.text
    for other in judged.values():
        if other.view.trace_id != j.view.trace_id or other.view.started_at >= j.view.started_at:
            continue
        for fragment in _fragments(other.view):
            if text.count(fragment) > own.count(fragment):
                flag(R.OLD_ATTEMPT_TEXT_IN_ANSWER,
                     f"holds text of older attempt {other.view.attempt_id!r}")
                return


def _fragments(view: AttemptView) -> list[str]:
    out: list[str] = []
    for block in view.blocks:
        out.extend(d for d in block.deltas if len(d.strip()) >= MIN_FRAGMENT_CHARS)
        if block.text.strip():
            out.append(block.text)
    return list(dict.fromkeys(out))


#: Seed 003's baseline: "one answer and one matching history entry" after release — owed
#: once the turn's application records its own history writes.
REQUIRED_DESTINATIONS: Final = ("history",)


def profile_requires(profile: str | None) -> tuple[str, ...]:
    """The destinations a trace's profile requires the released answer to reach."""
    from tracestore.projections.profiles import PROFILES

    found = PROFILES.get(profile or "")
    return found.required_destinations if found is not None else ()


def owed_destinations(profile: str | None, recorded: set[str]) -> dict[str, str]:
    """What the turn's released answer owes, given the destinations its application records
    writes to (``recorded``: empty when it records none): destination → why (the words the
    audit and the review use).  The profile's required destinations once any application
    write of the turn is recorded; history (seed 003) once a history write is."""
    owed: dict[str, str] = {}
    required = profile_requires(profile)
    for destination in ANSWER_DESTINATIONS:
        if recorded and destination in required:
            owed[destination] = f"required by profile {profile}"
        elif destination in REQUIRED_DESTINATIONS and destination in recorded:
            owed[destination] = ("required by seed 003: one matching history entry; the "
                                 "application records its history writes")
    return owed


def _missing_write_violations(writes: list[tuple[int, DestinationWritten]],
                              judged: Mapping[str, _Judged], owners: _Owners
                              ) -> list[Violation]:
    """Seed 003: when a trace's application records its own writes, the turn's
    released answer owes every destination ``owed_destinations`` names; one it never reached
    is a violation, named at the release position (a second history write is already
    ``duplicate_history_entry``, a second export/copy ``repeated_destination_write``).  A
    log recording only ui writes owes history nothing — unless the trace's profile requires
    it (``<profile>-every-destination``: ui, history, export and copy)."""
    recording: dict[str, set[str]] = {}
    for _, w in writes:
        if w.source == "application":
            recording.setdefault(judged[w.attempt_id].view.trace_id, set()).add(w.destination)
    written = {(_owner_of_text(w, judged, owners), w.destination) for _, w in writes}
    # The turn's answer is its last released attempt: one released earlier and then
    # regenerated (a retry released after it) owes history nothing — seed 003 keeps one
    # answer and one matching history entry per turn.
    last: dict[str, tuple[int, str]] = {}
    for attempt_id, j in judged.items():
        if j.decision.status == R.RELEASED:
            at = (j.decision.decided_at_position or 0, attempt_id)
            last[j.view.trace_id] = max(last.get(j.view.trace_id, at), at)
    found: list[Violation] = []
    for attempt_id, j in judged.items():
        d = j.decision
        if d.status != R.RELEASED or last[j.view.trace_id][1] != attempt_id:
            continue
        owed = owed_destinations(j.view.profile, recording.get(j.view.trace_id, set()))
        for destination, why in owed.items():
            if (attempt_id, destination) not in written:
                found.append(Violation(
                    R.MISSING_DESTINATION_WRITE, attempt_id, destination,
                    d.decided_at_position or 0,
                    f"the released answer never reached {destination} ({why})"))
    return found
