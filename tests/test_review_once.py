"""Issue 22: the trace page folds each attempt once and derives each record field once.

Structural properties (call counts), never times: the page of a 10,000-frame attempt runs
one ``AttemptFold`` over it (the audit's judge; the review record reuses that view and
decision, the rows that fold's observations of each frame), the normalizer once per frame,
and each deriver once (the ones that name the running version twice: the approval digest
binds the record as derived without a version).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from serve_scenarios import long_attempt

from tracestore.events import StoredEvent
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.projections import audit, decide_release, project_attempt, trace_attempts
from tracestore.projections import attempt as attempt_module
from tracestore.providers.bedrock import BedrockConverseStreamNormalizer
from tracestore.report.html import render_html
from tracestore.report.model import build_report
from tracestore.review import fill_record, load_template
from tracestore.review import context as context_module
from tracestore.review.context import READS_VERSION, build_context
from tracestore.review.derivers import get_deriver

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def events_of(scenario: dict[str, Any]) -> list[StoredEvent]:
    return preview_replay(parse_scenario(scenario))[1]


@pytest.fixture(scope="module")
def long_events() -> list[StoredEvent]:
    return events_of(long_attempt(frames=10_000))


def count_folds(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    folds: Counter[str] = Counter()
    init = attempt_module.AttemptFold.__init__

    def counting(self: Any, start: StoredEvent, *args: Any, **kw: Any) -> None:
        folds[start.event.attempt_id] += 1
        init(self, start, *args, **kw)

    monkeypatch.setattr(attempt_module.AttemptFold, "__init__", counting)
    return folds


def count_derivers(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    for name, func in list(context_module.DERIVERS.items()):
        def counting(ctx: Any, _name: str = name, _func: Any = func) -> Any:
            calls[_name] += 1
            return _func(ctx)
        monkeypatch.setitem(context_module.DERIVERS, name, counting)
    return calls


def test_the_page_of_a_10000_frame_attempt_folds_it_once(
        long_events: list[StoredEvent], monkeypatch: pytest.MonkeyPatch) -> None:
    template = load_template("trace-review")
    before = render_html(build_report(long_events, "t10k", template=template, version="9.9"),
                         version="9.9")
    folds = count_folds(monkeypatch)
    derived = count_derivers(monkeypatch)
    fed: Counter[str] = Counter()
    feed = BedrockConverseStreamNormalizer.feed

    def counting_feed(self: Any, native: Any, event_name: str | None = None) -> Any:
        fed["frames"] += 1
        return feed(self, native, event_name)

    monkeypatch.setattr(BedrockConverseStreamNormalizer, "feed", counting_feed)
    page = render_html(build_report(long_events, "t10k", template=template, version="9.9"),
                       version="9.9")
    assert page == before
    assert dict(folds) == {"t10k-a": 1}
    frames = sum(1 for e in long_events if e.type == "frame.received")
    assert frames == 10_000 - 1  # the drain is the 10,000th event of the attempt
    assert fed["frames"] == frames  # normalized once: the rows reuse the fold's observations
    wanted = Counter(f.evidence for f in template.fields if f.evidence)
    wanted.update(name for name in list(wanted) if name in READS_VERSION)
    assert derived == wanted
    assert derived["reader_revision"] == 2  # the running version, and the digest's copy


def test_a_record_alone_folds_its_attempt_once(long_events: list[StoredEvent],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    template = load_template("trace-review")
    before = fill_record(template, long_events, "t10k-a", version="").to_dict()
    folds = count_folds(monkeypatch)
    derived = count_derivers(monkeypatch)
    assert fill_record(template, long_events, "t10k-a", version="").to_dict() == before
    assert dict(folds) == {"t10k-a": 1}
    assert set(derived.values()) == {1}  # no version: the digest's fields are the record's


def seed_events() -> list[tuple[str, list[StoredEvent]]]:
    """Every scenario of seed003 and of the report's fixtures (one attempt or several,
    retries, Stops, buggy applications, hostile text), and the agent runs of seed001 (their
    own judge)."""
    from agenthelp import events_of as agent_events
    from agenthelp import report as agent_report

    out = [("seed001-agent", agent_events(agent_report()))]
    for folder in ("seed003", "report"):
        for path in sorted((FIXTURES / folder).glob("*.json")):
            scenario = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(scenario, dict) and "steps" in scenario:
                out.append((path.stem, events_of(scenario)))
    return out


def test_the_audits_view_and_decision_are_the_attempts_own_fold() -> None:
    """What the record reuses from the audit is what projecting the attempt alone gives."""
    checked = 0
    for name, events in seed_events():
        report = audit(events)
        decisions = {a.attempt_id: a.decision for a in report.attempts}
        for attempt_id in trace_attempts(events):
            assert report.views[attempt_id] == project_attempt(events, attempt_id), name
            assert decisions[attempt_id] == decide_release(events, attempt_id), name
            checked += 1
    assert checked >= 40


def test_only_the_version_readers_depend_on_the_version() -> None:
    """A deriver outside ``READS_VERSION`` gives the same value under any version, so the
    digest may reuse it; the version readers name it."""
    assert {"reader_revision"} == READS_VERSION
    for name, events in seed_events():
        for attempt_id in trace_attempts(events):
            a = build_context(events, attempt_id, template="trace-review", version="1.0")
            b = build_context(events, attempt_id, template="trace-review", version="")
            for evidence in context_module.DERIVERS:
                func = get_deriver(evidence)
                assert func is not None
                if evidence in READS_VERSION:
                    assert func(a) != func(b), (name, evidence)
                else:
                    assert func(a) == func(b), (name, evidence)


def test_the_build_leaves_the_garbage_collector_as_it_found_it() -> None:
    """build_report pauses the collector while it builds (many small live objects), and
    gives it back, also when the trace is unknown, and leaves a paused one paused."""
    import gc

    from tracestore.errors import NotFound

    events = events_of(json.loads((FIXTURES / "seed003" / "t8.json").read_text("utf-8")))
    assert gc.isenabled()
    build_report(events, "t8")
    assert gc.isenabled()
    with pytest.raises(NotFound):
        build_report(events, "no-such-trace")
    assert gc.isenabled()
    gc.disable()
    try:
        build_report(events, "t8")
        assert not gc.isenabled()
    finally:
        gc.enable()
