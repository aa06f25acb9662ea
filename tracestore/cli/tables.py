"""Terminal tables for decisions, destinations, violations and timelines.

Written to read well at 80 columns as at 200:

* codes and ids are tokens: their columns are at least as wide as the longest one and
  never wrap, so ``local_stop_before_release`` is never split into ``local_sto``/``p_…``;
  the free-text columns (answers, messages) give way instead;
* a cell that must be cut ends with ``…`` (never a bare cut);
* hashes are shown as their first ``HASH_CHARS`` hex digits everywhere;
* a timeline row is one line per event, and a destination write that broke the policy is
  drawn differently (``✗``, bold red) from a correct one (``→``, blue); ``(app)`` marks a
  write recorded from a real application rather than made by the replay harness.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any


from tracestore.agent.describe import AGENT_EVENT_TYPES
from tracestore.cli.common import Text, console, term_text
from tracestore.cli.lazy import rich_name
from tracestore.errors import InputError

if TYPE_CHECKING:
    from tracestore.events import StoredEvent
    from tracestore.projections.destinations import AuditReport, Violation
    from tracestore.projections.release import ReleaseDecision

if TYPE_CHECKING:  # the real class for the type checker (see cli/common.py's Text)
    from rich.table import Table
else:
    Table = rich_name("rich.table", "Table")  # loaded when a table is printed (cli/lazy.py)

#: Characters of model text shown per cell (the JSON output is never cut).
CELL_CHARS = 60
#: Hex digits of a sha256 shown in tables and messages.
HASH_CHARS = 16
#: Below this width for its messages, the violations table becomes one block per violation.
MIN_MESSAGE_CHARS = 24


def short_hash(sha256: str) -> str:
    return sha256[:HASH_CHARS]


def token_column(table: Table, header: str, tokens: Iterable[str], **kwargs: Any) -> None:
    """A column of codes or ids: as wide as its longest token, never wrapped."""
    width = max((len(t) for t in tokens), default=0)
    table.add_column(header, no_wrap=True, min_width=max(width, len(header)), **kwargs)


def rest_width(fixed: Sequence[int], columns: int, minimum: int = 12) -> int:
    """Width left for the free columns once the fixed ones and the borders are drawn."""
    return max(minimum, console.width - sum(fixed) - 3 * columns - 1)


def _lines(codes: Iterable[str], style: str = "") -> Text:
    return Text("\n").join(Text(c, style=style) for c in codes)


#: Below this many characters for a destination's text, the hash column gives way.
MIN_TEXT_CHARS = 20
#: Below this many characters for the answer column, answers go beneath the table instead:
#: a few characters a line folds words mid-way and makes every row a dozen lines tall.
MIN_ANSWER_CHARS = 24


def decision_table(decisions: Sequence[ReleaseDecision], title: str) -> Any:
    """Attempt, status, decided-at position, reasons (notes dimmed below), answer; on a
    terminal too narrow for the answer column, the answers follow the table, one a line."""
    table = Table(title=term_text(title))
    codes = [c for d in decisions for c in (*d.reasons, *d.notes)]
    ids = [d.attempt_id for d in decisions]
    statuses = [d.status for d in decisions]
    token_column(table, "attempt", ids)
    token_column(table, "status", statuses)
    table.add_column("at", justify="right", no_wrap=True)
    token_column(table, "reasons (notes)", codes)
    fixed = [max(map(len, [*ids, "attempt"])), max(map(len, [*statuses, "status"])), 4,
             max(map(len, [*codes, "reasons (notes)"]))]
    beside = rest_width(fixed, 5, minimum=0) >= MIN_ANSWER_CHARS
    if beside:
        table.add_column("answer", overflow="fold", ratio=1)
    for d in decisions:
        style = "green" if d.eligible else ("yellow" if d.status == "pending" else "red")
        reasons = _lines(d.reasons)
        if d.notes:
            reasons.append("\n")
            reasons.append(_lines((f"({n})" for n in d.notes), "dim"))
        cells: list[Any] = [term_text(d.attempt_id), Text(d.status, style=style),
                 "—" if d.decided_at_position is None else str(d.decided_at_position), reasons]
        if beside:
            cells.append(term_text(d.answer, limit=CELL_CHARS) if d.answer is not None else "—")
        table.add_row(*cells)
    answered = [d for d in decisions if d.answer is not None]
    if beside or not answered:
        return table
    width = max(console.width - 2, 20)
    lines = [Text("answers", style="bold")]
    for d in answered:
        line = Text.assemble(f"{d.attempt_id}: ", term_text(d.answer, limit=width))
        line.truncate(width, overflow="ellipsis")
        lines.append(line)
    return rich_name("rich.console", "Group")(table, *lines)


def print_reasons(decisions: Sequence[ReleaseDecision]) -> None:
    from tracestore.projections.reasons import DESCRIPTIONS

    codes = dict.fromkeys(c for d in decisions for c in (*d.reasons, *d.notes))
    for code in codes:
        console.print(Text.assemble((f"  {code}", "bold"), f": {DESCRIPTIONS.get(code, '')}"))


def destinations_table(report: AuditReport) -> Table:
    """One row per destination write (an attempt without writes: one row of dashes)."""
    from tracestore.events import ANSWER_DESTINATIONS

    bad = {(v.position, v.destination) for v in report.violations}
    table = Table(title="destinations")
    ids = [a.attempt_id for a in report.attempts]
    positions = [str(e.position) for a in report.attempts
                 for entries in a.destinations.values() for e in entries] or ["—"]
    token_column(table, "attempt", ids)
    token_column(table, "status", [a.decision.status for a in report.attempts])
    token_column(table, "dest.", ANSWER_DESTINATIONS)
    token_column(table, "pos", positions, justify="right")
    written = positions != ["—"]
    statuses = [a.decision.status for a in report.attempts]
    fixed = [max(map(len, ids + ["attempt"])), max(map(len, statuses + ["status"])), 7,
             max(map(len, positions + ["pos"]))]
    # The hash column gives way on a narrow terminal (--json always has it): the text
    # matters more to a reader, and a text column of a few characters says nothing.
    hashed = written and rest_width([*fixed, HASH_CHARS], 6, minimum=0) >= MIN_TEXT_CHARS
    if hashed:
        table.add_column("sha256", no_wrap=True, min_width=HASH_CHARS)
    if written:  # without any write, the hash and text columns would only hold dashes
        table.add_column("text", overflow="ellipsis", no_wrap=True,
                         max_width=rest_width([*fixed, HASH_CHARS] if hashed else fixed,
                                              6 if hashed else 5))
    for a in report.attempts:
        writes = [(name, e) for name in ANSWER_DESTINATIONS for e in a.destinations[name]]
        status = Text(a.decision.status, style="green" if a.decision.eligible else "red")
        if not writes:
            table.add_row(term_text(a.attempt_id), status,
                          *[Text("—", style="dim")] * (2 + written + hashed))
        for name, e in writes:
            style = "bold red" if (e.position, name) in bad else ""
            cells: list[Any] = [term_text(a.attempt_id), status, Text(name, style=style),
                                str(e.position)]
            if hashed:
                cells.append(short_hash(e.sha256))
            table.add_row(*cells, term_text(e.text, style, limit=CELL_CHARS))
    return table


def print_violations(report: AuditReport) -> None:
    if not report.violations:
        console.print(Text("no violations", style="green"))
        return
    title = f"{len(report.violations)} violations"
    codes = [v.code for v in report.violations]
    ids = [v.attempt_id for v in report.violations]
    dests = [v.destination for v in report.violations]
    fixed = [max(len(str(v.position)) for v in report.violations), *(
        max(map(len, [*column, header])) for column, header in
        ((codes, "code"), (ids, "attempt"), (dests, "dest.")))]
    if rest_width(fixed, 5, minimum=0) < MIN_MESSAGE_CHARS:
        _violation_blocks(report, title)  # long ids: a table would leave the messages no room
        print_violations_by_trace(report)
        return
    table = Table(title=title, title_style="bold red")
    table.add_column("pos", justify="right", no_wrap=True)
    token_column(table, "code", codes)
    token_column(table, "attempt", ids)
    token_column(table, "dest.", dests)
    table.add_column("what", overflow="fold", ratio=1)
    for v in report.violations:
        table.add_row(str(v.position), Text(v.code, style="red"), term_text(v.attempt_id),
                      v.destination, term_text(v.message))
    console.print(table)
    print_violations_by_trace(report)


def print_violations_by_trace(report: AuditReport) -> None:
    """One closing line: how many violations each trace holds, so a store's few buggy
    traces stand out from the many clean ones."""
    trace_of = {a.attempt_id: a.trace_id for a in report.attempts}
    counts: dict[str, int] = {}
    for v in report.violations:
        trace = trace_of.get(v.attempt_id, "?")
        counts[trace] = counts.get(trace, 0) + 1
    total = len(report.violations)
    listed = ", ".join(f"{t} ({n})" for t, n in counts.items())
    console.print(Text.assemble(
        (f"{total} violation{'s' * (total != 1)}", "bold red"),
        f" in {len(counts)} of {len({a.trace_id for a in report.attempts})} traces: ",
        term_text(listed)), soft_wrap=False)


def _violation_blocks(report: AuditReport, title: str) -> None:
    """One block per violation: position, code, attempt and destination on one line, the
    message indented below (wrapped at the terminal's width)."""
    from rich.padding import Padding

    console.print(Text(title, style="bold red"))
    for v in report.violations:
        console.print(Text.assemble(f"#{v.position} ", (v.code, "red"), " ",
                                    term_text(f"({v.attempt_id}, {v.destination})")))
        console.print(Padding(term_text(v.message), (0, 0, 0, 4)), soft_wrap=False)


def timeline(events: Sequence[StoredEvent], trace_id: str,
             violations: Sequence[Violation] = ()) -> Table:
    """One row per global position, one column per attempt: interleavings side by side."""
    from tracestore.projections import trace_attempts

    attempts = trace_attempts(events, trace_id)
    flagged: dict[int, list[str]] = {}
    for v in violations:
        flagged.setdefault(v.position, []).append(v.code)
    table = Table(title=term_text(f"timeline of trace {trace_id}"))
    pos_width = max(3, len(str(max((e.position for e in events), default=0))))
    table.add_column("pos", justify="right", no_wrap=True, min_width=pos_width)
    table.add_column("trace", no_wrap=True, overflow="ellipsis", min_width=8, max_width=16)
    lanes = max(1, len(attempts))
    lane_width = rest_width([pos_width, 16], lanes + 2, minimum=12 * lanes) // lanes
    for attempt_id in attempts:
        table.add_column(term_text(attempt_id), no_wrap=True, overflow="ellipsis",
                         max_width=lane_width)
    normalizers: dict[str, Any] = {}
    for stored in events:
        owner = stored.attempt_id
        if stored.trace_id != trace_id and owner not in attempts:
            continue
        cells: list[Text | str] = [""] * (1 + len(attempts))
        index = attempts.index(owner) + 1 if owner in attempts else 0
        cells[index] = _cell(stored, normalizers, flagged.get(stored.position, []))
        table.add_row(str(stored.position), *cells)
    return table


def _cell(stored: StoredEvent, normalizers: dict[str, Any], codes: list[str]) -> Text:
    event = stored.event
    kind = stored.type
    if kind == "frame.received":
        return _frame_cell(event, normalizers)
    if kind == "attempt.started":
        retry = f" retry of {event.retry_of}" if event.retry_of else ""
        return term_text(f"▶ open {event.reader or ''}{retry} · {event.api}", "bold")
    if kind == "local.stopped":
        return Text("■ STOP", style="bold red")
    if kind == "transport.drained":
        return Text(f"⇥ drain {event.outcome}", style="cyan")
    if kind == "release.decided":
        style = "bold green" if event.eligible else "bold red"
        return Text(f"⚖ {event.status} @{event.decided_at_position}", style=style)
    if kind == "trace.opened":
        return term_text(f"● opened {event.profile or ''}".rstrip(), "bold")
    if kind == "semantic.judged":
        return Text(f"semantic {event.verdict}", style="magenta")
    if kind in AGENT_EVENT_TYPES:
        from tracestore.agent.describe import describe

        return term_text(describe(event), "magenta", limit=CELL_CHARS)
    if kind == "destination.written":
        return _write_cell(event, codes)
    return term_text(kind, "dim")


def _write_cell(event: Any, codes: list[str]) -> Text:
    """A write that broke the policy reads differently at a glance: ✗, red, its codes."""
    by_app = " (app)" if event.source == "application" else ""
    if codes:  # the codes are in the violations table, by position; here: the mark
        return term_text(f"✗ {event.destination}{by_app}: {event.text}", "bold red",
                         limit=CELL_CHARS)
    return term_text(f"→ {event.destination}{by_app}: {event.text}", "blue", limit=CELL_CHARS)


def _frame_cell(event: Any, normalizers: dict[str, Any]) -> Text:
    from tracestore.providers.base import make_normalizer

    normalizer = normalizers.get(event.attempt_id)
    if normalizer is None:
        try:
            normalizer = normalizers[event.attempt_id] = make_normalizer(event.api)
        except InputError:
            return term_text(",".join(event.kinds) or "frame", "dim")
    parts = []
    for obs in normalizer.feed(event.native, event.event_name):
        if obs.kind in ("text_delta", "final_text"):
            parts.append(f"{obs.kind} {json.dumps(obs.text or '', ensure_ascii=False)}")
        elif obs.kind == "terminal":
            parts.append(f"terminal {obs.stop_reason or obs.status}")
        elif obs.kind == "error":
            parts.append(f"error {obs.native_type}")
        else:
            parts.append(obs.kind)
    return term_text("; ".join(parts), limit=CELL_CHARS, json_quoted=True)
