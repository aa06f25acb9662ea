"""The release decision of every real capture under a rule that accepts ANY text.

``python tools/real_decisions.py`` prints the Markdown table kept in docs/providers.md
("Release decisions with an accept-any-text rule"); ``tests/test_real_decisions_doc.py``
checks that the table there is exactly what this prints, so it cannot drift from the code.
With every text accepted, only the profile (reasoning, tools, stop reasons, empty or inline
reasoning text …), the native ending and the drain can keep an answer from release.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from tracestore.errors import TracestoreError
from tracestore.events import StoredEvent, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections import decide_release, project_attempt

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "real"
#: One empty pattern: it matches every text, the empty one included.
ACCEPT_ANY_TEXT = TaskRule(description="accept any text", answer_patterns=("",))
_STAMP = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
QUOTE = 40


def captures() -> list[Path]:
    return sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "⏎").replace("`", "'")


def _events(path: Path) -> tuple[str, list[StoredEvent]]:
    plan = plan_ingest(path.read_bytes(), filename=path.name, attempt_id="a",
                       task=ACCEPT_ANY_TEXT)
    return plan.api, [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1, _STAMP,
                                  n.trace_id, n.event, "") for i, n in enumerate(plan.events)]


def why(events: list[StoredEvent]) -> str:
    """One line: the fact at the deciding position, in the events' own words."""
    d = decide_release(events, "a")
    view = project_attempt(events, "a")
    at = d.decided_at_position
    term = view.terminal
    ending = (f"{term.native_type} {term.stop_reason or term.status or ''}".strip()
              if term else "no native terminal")
    if d.eligible:
        answer = d.answer or ""
        shown = answer if len(answer) <= QUOTE else answer[: QUOTE - 1] + "…"
        return f"normal ending ({ending}), clean drain, text accepted: \"{_cell(shown)}\""
    anomalies = [a for a in view.anomalies if a.position == at]
    if anomalies:
        a = anomalies[0]
        return f"{a.code} at #{at}: {a.native_type}" + (f" ({a.detail})" if a.detail else "")
    errors = [e for e in view.errors if e.position == at]
    if errors:
        e = errors[0]
        code = f", code {e.error_code}" if e.error_code and e.error_code != e.name else ""
        return f"native error event '{e.name}' ({e.classification}{code}) at #{at}"
    drain = f"; {view.drain.outcome} drain" if view.drain else ""
    return f"{ending}{drain}"


def rows() -> list[tuple[str, str, str, str, str]]:
    """(capture, provider, status, reasons, why) for every real capture."""
    out = []
    for path in captures():
        name = path.relative_to(REAL).as_posix()
        try:
            api, events = _events(path)
        except TracestoreError as exc:
            out.append((name, "—", "refused", f"`{exc.code}`",
                        "bad bytes: a typed error, nothing written"))
            continue
        d = decide_release(events, "a")
        out.append((name, api, d.status, ", ".join(f"`{r}`" for r in d.reasons), why(events)))
    return out


def render() -> str:
    lines = ["| capture | provider | decision | reasons | why |", "|---|---|---|---|---|"]
    lines += [f"| {c} | {p} | {s} | {r} | {w} |" for c, p, s, r, w in rows()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
