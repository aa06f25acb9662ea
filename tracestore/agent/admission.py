"""Admission re-derived: replay a run's decisions against its observations and limits.

Seed 001's controller admits or refuses every model proposal before it runs.  A recorded run
says what the application did; this projection does it again from the recorded facts alone
(the proposals, the tool observations, the limits, the elapsed time) and says where the two
differ.  Nothing here trusts the recorded status, reason, usage or citations: they are only
compared.  The replay mirrors seed 001's ``run`` step by step, so for an honest recording
the re-derived status, reason and usage equal the recorded ones exactly.

Pure: a ``RunRecord`` in, an ``Admission`` out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracestore.agent import codes as C
# Seed 001's per-decision checks (``checks``): used by the replay, importable from here too.
from tracestore.agent.checks import (  # noqa: F401
    ACTIONS, MAX_CITATIONS, MAX_FIELD_CHARS, SCHEMA_FIELDS, check_citations, normalized_terms,
    text_matches_hash, validate_decision,
)
from tracestore.agent.run import USAGE_NAMES, Observed, Proposal, RunRecord

#: Status of a run whose facts do not (yet) end it.
UNFINISHED = "unfinished"
#: What a tool step returns when the call was admitted but the run ended with it (a tool
#: error as recorded, or a changed read): falsy like "admitted", with ``end`` set.
_ENDED = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The re-derived verdict on one proposal: admitted, refused (with code) or not_reached."""

    index: int
    action: Any
    stage: str
    code: str | None
    position: int

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "action": self.action, "stage": self.stage,
                "code": self.code, "position": self.position}


@dataclass(frozen=True, slots=True)
class Finding:
    """Where the recorded run and the re-derivation disagree, with the evidence position."""

    code: str
    position: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "position": self.position, "message": self.message}


@dataclass(frozen=True, slots=True)
class Admission:
    status: str
    reason: str | None
    ended_at: int | None
    "Position of the event at which the re-derived run ended."
    usage: Mapping[str, int]
    verdicts: tuple[Verdict, ...]
    citations: tuple[dict[str, Any], ...]
    "The answer's citations with URLs from the read records (answered runs only)."
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default=())
    observations: tuple[Any, ...] = ()
    """The observations the re-derivation admitted (seed 001's evaluator reads only the
    run's own list, which only successful tool calls enter): what grading reads."""

    @property
    def agrees(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "ended_at": self.ended_at,
                "usage": dict(self.usage), "agrees": self.agrees,
                "verdicts": [v.to_dict() for v in self.verdicts],
                "citations": list(self.citations),
                "findings": [f.to_dict() for f in self.findings], "notes": list(self.notes)}


class _Replay:
    """Seed 001's controller, fed recorded observations instead of calling tools."""

    def __init__(self, run: RunRecord) -> None:
        self.run = run
        self.limits = run.opened.limits
        self.usage = {name: 0 for name in USAGE_NAMES}
        self.issued: dict[str, Mapping[str, Any]] = {}
        self.passages: dict[str, Mapping[str, Any]] = {}
        self.queries: set[tuple[str, ...]] = set()
        self.cursor = 0
        self.admitted: list[Observed] = []
        "Observations of admitted calls, in order (seed 001's run-owned observations list)."
        self.verdicts: list[Verdict] = []
        self.end: tuple[str, str | None, int | None] | None = None
        self.citations: tuple[dict[str, Any], ...] = ()
        self.findings: list[Finding] = []
        self.notes: list[str] = []

    # -- recorded failures the facts cannot contradict ------------------------------------
    def _recorded_failure(self) -> str | None:
        fin = self.run.finished
        return fin.reason if fin is not None and fin.status == "failed" else None

    def _finish(self, status: str, reason: str | None, position: int | None) -> bool:
        self.end = (status, reason, position)
        return False

    # -- tools -------------------------------------------------------------------------
    def _take(self, tool: str, arguments: dict[str, Any]) -> Observed | None:
        obs = self.run.observations
        if self.cursor < len(obs):
            o = obs[self.cursor]
            if o.tool == tool and dict(o.arguments) == arguments:
                self.cursor += 1
                self.admitted.append(o)
                return o
        return None

    def _peek(self, tool: str, arguments: dict[str, Any]) -> Observed | None:
        obs = self.run.observations
        if self.cursor < len(obs):
            o = obs[self.cursor]
            if o.tool == tool and dict(o.arguments) == arguments:
                return o
        return None

    def _tool_failed(self, position: int) -> None:
        """An admitted call without its observation: a tool error, if the run failed."""
        recorded = self._recorded_failure()
        if recorded is not None and recorded not in C.REFUSAL_CODES:
            self.notes.append(f"tool error as recorded: {recorded}")
            self._finish("failed", recorded, position)
            return
        obs = self.run.observations
        if self.cursor < len(obs):  # a tool ran, but not the call that was admitted
            o = obs[self.cursor]
            self.findings.append(Finding(C.OBSERVATION_MISMATCH, o.position,
                                         f"observation {o.index} is not the admitted call"))
            self._finish("failed", C.OBSERVATION_MISMATCH, position)
            return
        self.findings.append(Finding(C.MISSING_OBSERVATION, position,
                                     "an admitted tool call has no observation"))
        self._finish("failed", C.MISSING_OBSERVATION, position)

    def _unobserved_read_bytes(self) -> None:
        """Seed 001 counts a read's bytes (``read_cost``) before calling the tool; when the
        tool then failed, the size is nowhere in the record.  The recorded total is taken
        (with a note) when it fits between what is counted and the allowance."""
        recorded_failure = self._recorded_failure()
        fin = self.run.finished
        total = fin.usage.get("source_bytes") if fin is not None and fin.usage else None
        if (recorded_failure is None or recorded_failure in C.REFUSAL_CODES
                or not isinstance(total, int)
                or not self.usage["source_bytes"] <= total <= self.limits.get("source_bytes", 0)):
            return
        self.usage["source_bytes"] = total
        self.notes.append("size of the failed read not recorded; its bytes taken as recorded")

    def search(self, query: str, position: int) -> str | None:
        """None when admitted (and observed), else the refusal code."""
        terms = normalized_terms(query)
        if terms in self.queries:
            return C.DUPLICATE_QUERY
        if self.usage["searches"] >= self.limits.get("searches", 0):
            return C.SEARCH_LIMIT
        self.queries.add(terms)
        self.usage["searches"] += 1  # admitted attempts count even if the tool fails
        o = self._take("search", {"query": query})
        if o is None:
            self._tool_failed(position)
            return _ENDED
        result = o.result
        extra = set(result) - {"query", "candidates"}
        listed = result.get("candidates")
        candidates = listed if isinstance(listed, list) else []
        if extra or any(not isinstance(c, Mapping) or set(c) - {"source_id", "rank", "version"}
                        for c in candidates):
            self.findings.append(Finding(C.SEARCH_RESULT_NOT_METADATA, o.position,
                                         "search observation carries more than metadata"))
        for cand in candidates:
            if isinstance(cand, Mapping) and isinstance(cand.get("source_id"), str):
                self.issued[cand["source_id"]] = cand
        return None

    def read(self, source: Any, position: int) -> str | None:
        if not isinstance(source, str) or source not in self.issued:
            return C.UNISSUED_SOURCE
        if source in self.passages:
            return C.DUPLICATE_READ
        o = self._peek("read", {"source_id": source})
        text = o.result.get("text") if o is not None else None
        size = len(text.encode("utf-8")) if isinstance(text, str) else None
        if self.usage["reads"] >= self.limits.get("reads", 0) or (
                size is not None
                and self.usage["source_bytes"] + size > self.limits.get("source_bytes", 0)):
            return C.READ_OR_BYTE_LIMIT
        fin = self.run.finished
        if o is None and fin is not None and fin.reason == C.READ_OR_BYTE_LIMIT:
            # The size of a source never read is not in the record; the refusal stands.
            self.notes.append("read size not recorded; byte-limit refusal taken as recorded")
            return C.READ_OR_BYTE_LIMIT
        self.usage["reads"] += 1
        if o is None:
            self._unobserved_read_bytes()
            self._tool_failed(position)
            return _ENDED
        self.cursor += 1  # the tool ran (``_peek`` matched this call) …
        self.usage["source_bytes"] += size or 0
        if not text_matches_hash(o.result) or o.result.get("source_id") != source:
            # … but seed 001 validates a read before it enters the run's observations: a
            # passage that fails its hash was never read, so nothing downstream (grading's
            # targets read, the trajectory) may count it.
            self._finish("failed", C.CHANGED_READ, o.position)
            return _ENDED
        self.admitted.append(o)
        self.passages[source] = o.result
        return None

    # -- the controller ---------------------------------------------------------------------
    def fixed_preamble(self) -> bool:
        """The fixed path searches the question once and reads every candidate."""
        at = self.run.opened_position
        code = self.search(self.run.opened.question, at)
        if code:
            return self._finish("incomplete", C.SEARCH_LIMIT, at) if code == C.SEARCH_LIMIT \
                else self._finish("failed", code, at)
        if self.end is not None:
            return False
        for source in list(self.issued):
            code = self.read(source, at)
            if code == C.READ_OR_BYTE_LIMIT:
                return self._finish("incomplete", code, at)
            if code:
                return self._finish("failed", code, at)
            if self.end is not None:
                return False
        return True

    def step(self, p: Proposal) -> bool:
        """Judge one proposal; False once the run has ended."""
        if self.usage["model_calls"] >= self.limits.get("model_calls", 0):
            self._verdict(p, "not_reached", None)
            return self._finish("incomplete", C.MODEL_CALL_LIMIT, p.position)
        self.usage["model_calls"] += 1
        code = validate_decision(p.decision)
        if code is not None:
            return self._refuse(p, "failed", code)
        action = p.decision["action"]
        if action == "stop":
            self._verdict(p, "admitted", None)
            return self._finish("incomplete", C.MODEL_STOPPED, p.position)
        if action == "answer":
            code, self.citations = check_citations(p.decision, self.passages)
            if code is not None:
                return self._refuse(p, "failed", code)
            self._verdict(p, "admitted", None)
            return self._finish("answered", C.CITATION_CONTRACT_PASSED, p.position)
        if self.run.mode == "fixed":
            return self._refuse(p, "failed", C.FIXED_POLICY_TOOL_REQUEST)
        code = (self.search(p.decision["query"], p.position) if action == "search"
                else self.read(p.decision["source_id"], p.position))
        if code in (C.SEARCH_LIMIT, C.READ_OR_BYTE_LIMIT):
            return self._refuse(p, "incomplete", code)
        if code:
            return self._refuse(p, "failed", code)
        self._verdict(p, "admitted", None)
        return self.end is None

    def _refuse(self, p: Proposal, status: str, code: str) -> bool:
        self._verdict(p, "refused", code)
        return self._finish(status, code, p.position)

    def _verdict(self, p: Proposal, stage: str, code: str | None) -> None:
        self.verdicts.append(Verdict(p.index, p.action, stage, code, p.position))


def rederive(run: RunRecord) -> Admission:
    """Replay ``run`` under seed 001's admission rules and compare with what it recorded."""
    r = _Replay(run)
    proposals = list(run.proposals)
    going = r.fixed_preamble() if run.mode == "fixed" else True
    for p in proposals:
        if going:
            going = r.step(p)
        else:
            r._verdict(p, "not_reached", None)
    if r.end is None:
        _end_without_terminal(r, proposals)
    _apply_deadline(r, proposals)
    status, reason, ended_at = r.end or (UNFINISHED, None, None)
    findings = r.findings + _compare(r, run, status, reason)
    return Admission(status, reason, ended_at, dict(r.usage), tuple(r.verdicts),
                     r.citations if status == "answered" else (), tuple(findings),
                     tuple(dict.fromkeys(r.notes)), tuple(r.admitted))


def _end_without_terminal(r: _Replay, proposals: list[Proposal]) -> None:
    """No proposal ended the run: the allowance ran out, or a reply was never recorded."""
    last = proposals[-1].position if proposals else r.run.opened_position
    recorded = r._recorded_failure()
    calls = r.usage["model_calls"]
    if recorded is not None and recorded.startswith(C.UNRECORDED_FAILURE_PREFIXES) and \
            calls < r.limits.get("model_calls", 0):
        r.usage["model_calls"] += 1  # the call whose reply failed was still made
        r.notes.append(f"the failing reply was not recorded; {recorded} taken as recorded")
        r._finish("failed", recorded, r.run.finished_position)
    elif calls >= r.limits.get("model_calls", 0):
        r._finish("incomplete", C.MODEL_CALL_LIMIT, last)


def _apply_deadline(r: _Replay, proposals: list[Proposal]) -> None:
    """Past its seconds limit, the run ends ``deadline`` at its last decision at the latest."""
    fin = r.run.finished
    seconds = r.run.opened.limits.get("seconds")
    if fin is None or fin.elapsed_seconds is None or seconds is None:
        return
    if fin.elapsed_seconds < seconds or (r.end and r.end[1] == C.DEADLINE):
        return
    position = proposals[-1].position if proposals else r.run.finished_position
    if proposals and r.verdicts and r.verdicts[-1].index == proposals[-1].index:
        last = r.verdicts[-1]
        r.verdicts[-1] = Verdict(last.index, last.action, "refused", C.DEADLINE, last.position)
    r.citations = ()
    r.end = ("incomplete", C.DEADLINE, position)


def _compare(r: _Replay, run: RunRecord, status: str, reason: str | None) -> list[Finding]:
    found: list[Finding] = []
    for v, p in zip(r.verdicts, run.proposals):
        if p.verdict is None:
            if v.stage == "not_reached":
                found.append(Finding(C.ADMISSION_DISAGREEMENT, p.position,
                                     f"decision {p.index} was proposed after the run should "
                                     "have ended"))
            continue
        if (p.verdict, p.verdict_code if p.verdict == "refused" else None) != (v.stage, v.code):
            found.append(Finding(
                C.ADMISSION_DISAGREEMENT, p.verdict_position,
                f"decision {p.index} ({_show(p.action)}) recorded {p.verdict}"
                f"{' ' + p.verdict_code if p.verdict == 'refused' and p.verdict_code else ''}; "
                f"re-derived {v.stage}{' ' + v.code if v.code else ''}"))
    for o in run.observations[r.cursor:]:
        found.append(Finding(C.UNADMITTED_OBSERVATION, o.position,
                             f"{o.tool} observation {o.index} follows no admitted decision"))
    fin = run.finished
    if fin is None:
        return found
    if (fin.status, fin.reason) != (status, reason):
        found.append(Finding(C.OUTCOME_DISAGREEMENT, run.finished_position,
                             f"recorded {fin.status}/{fin.reason}; re-derived "
                             f"{status}/{reason}"))
    if fin.usage is not None and {k: fin.usage.get(k) for k in USAGE_NAMES} != r.usage:
        found.append(Finding(C.USAGE_DISAGREEMENT, run.finished_position,
                             f"recorded usage {dict(fin.usage)}; re-derived {r.usage}"))
    if fin.status == "answered" and status == "answered" and \
            [dict(c) for c in fin.citations] != list(r.citations):
        found.append(Finding(C.CITATION_DISAGREEMENT, run.finished_position,
                             "recorded citations differ from the read records"))
    return found


def _show(action: Any) -> str:
    return action if isinstance(action, str) else type(action).__name__
