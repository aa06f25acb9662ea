"""Review fields for agent runs: authority (admitted and refused decisions) and candidate.

The review derivers ``authority`` and ``candidate`` hand an ``agent-run`` attempt to these
functions.  Every value is derived from the recorded verdicts and the re-derived admission;
refused proposals are always listed (never folded away), and a verdict the re-derivation
does not share is named next to it.  Model text is quoted, bounded, and escaped at render.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracestore.agent.admission import Admission, rederive
from tracestore.agent.checks import text_matches_hash
from tracestore.agent.run import Proposal, RunRecord, gather_run
from tracestore.review.context import Derived, ReviewContext
from tracestore.review.wording import quote

#: Tool names admitted by seed 001's controller; anything else is refused before execution.
TOOLS = ("search", "read")


def _run(ctx: ReviewContext) -> tuple[RunRecord, Admission] | None:
    run = gather_run(ctx.events, ctx.attempt_id)
    return (run, rederive(run)) if run is not None else None


def _what(p: Proposal) -> str:
    d = p.decision
    action = d.get("action")
    if action == "search":
        return f"search {quote(str(d.get('query', '')), 60)}"
    if action == "read":
        return f"read {quote(str(d.get('source_id', '')), 60)}"
    if action in ("answer", "stop"):
        return str(action)
    return f"{quote(str(action), 40)} (not a tool)"


def authority(ctx: ReviewContext) -> Derived | None:
    """Which proposals were admitted or refused, with positions; disagreements named."""
    found = _run(ctx)
    if found is None:
        return None
    run, admission = found
    derived = {v.index: v for v in admission.verdicts}
    admitted: list[str] = []
    refused: list[str] = []
    differ: list[str] = []
    cited: list[int | None] = [run.opened_position]
    for p in run.proposals:
        at = p.verdict_position or p.position
        cited.append(at)
        v = derived.get(p.index)
        if p.verdict == "refused":
            refused.append(f"{_what(p)} ({p.verdict_code or 'no code'}) at #{at}")
        elif p.verdict == "admitted":
            admitted.append(f"{_what(p)} at #{at}")
        if v is not None and (p.verdict, p.verdict_code if p.verdict == "refused" else None) \
                != (v.stage, v.code):
            differ.append(f"{_what(p)} at #{at}: re-derived {v.stage}"
                          + (f" {v.code}" if v.code else ""))
    limits = ", ".join(f"{k} {v}" for k, v in run.opened.limits.items())
    parts = [f"Agent run ({run.mode} path) with tools {', '.join(TOOLS)} only, admitted by "
             f"application code before execution; limits: {limits}",
             f"admitted: {'; '.join(admitted) if admitted else 'none'}",
             f"refused: {'; '.join(refused) if refused else 'none'}"]
    implied = any(p.implied for p in run.proposals)
    if implied:
        parts.append("verdicts implied by the recorded run result")
    if differ:
        parts.append("DISAGREES with re-derived admission: " + "; ".join(differ))
    else:
        parts.append(f"re-derived admission agrees ({admission.status}/{admission.reason})")
    return Derived.of("; ".join(parts), *cited, run.finished_position)


def _citation_check(c: Mapping[str, Any], reads: Mapping[str, tuple[int, Mapping[str, Any]]]
                    ) -> tuple[str, int | None]:
    source = str(c.get("source_id", ""))
    read = reads.get(source)
    if read is None:
        return f"{quote(source, 60)} NOT READ", None
    position, result = read
    text = result.get("text")
    matched = isinstance(text, str) and str(c.get("quote", "")) in text
    hashed = text_matches_hash(result)
    verdict = ("quote matches" if matched else "quote DOES NOT MATCH") + \
        ("" if hashed else ", text does not match its text_sha256")
    return f"{quote(source, 60)} ({verdict} read at #{position})", position


def candidate(ctx: ReviewContext) -> Derived | None:
    """The run's answer, its cited sources and whether each quote matched the read text."""
    found = _run(ctx)
    if found is None:
        return None
    run, admission = found
    fin = run.finished
    if fin is None:
        return Derived.of("Run not finished: no candidate yet", run.opened_position)
    if fin.status != "answered":
        return Derived.of(f"No answer: the run ended {fin.status} ({fin.reason}) at "
                          f"#{run.finished_position}; nothing to release",
                          run.finished_position)
    reads = {str(o.result.get("source_id")): (o.position, o.result)
             for o in run.observations if o.tool == "read"}
    checks = [_citation_check(c, reads) for c in fin.citations]
    parts = [f"Answered ({fin.reason}) at #{run.finished_position}",
             "cited: " + ("; ".join(text for text, _ in checks) if checks else "nothing"),
             f"re-derived: {admission.status}/{admission.reason}",
             f"text: {quote(fin.answer)}"]
    return Derived.of("; ".join(parts), run.finished_position, *(p for _, p in checks))


def evidence_gaps(ctx: ReviewContext) -> list[str]:
    """What an agent run's log cannot show (the stream gaps, like a drain, do not apply)."""
    found = _run(ctx)
    if found is None:
        return []
    run, _ = found
    gaps: list[str] = []
    if any(p.implied for p in run.proposals):
        gaps.append("the application's own admission log (verdicts implied by the run result)")
    undigested = [c.index for c in run.calls if c.request_sha256 is None]
    if undigested:
        gaps.append(f"model request bodies ({len(undigested)} of {len(run.calls)} calls have "
                    "no digest)")
    absent = [c.index for c in run.calls if c.usage is None]
    if absent:
        gaps.append(f"provider usage for {len(absent)} of {len(run.calls)} model calls")
    gaps.append("raw model replies (decisions are stored decoded)")
    fin = run.finished
    if fin is None:
        gaps.append("the end of the run (no run.finished)")
    elif fin.elapsed_seconds is None:
        gaps.append("the run's elapsed time (the deadline cannot be re-checked)")
    else:
        gaps.append("per-call times (the deadline is judged on the run's total time)")
    return gaps
