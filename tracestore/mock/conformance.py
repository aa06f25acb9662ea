"""The conformance pack: seed 003's application cases as mock scenarios.

Each case is a ``tracestore mock`` scenario (``fixtures/conformance/<name>.json``, over
Chat Completions captures of the seed's decoded events), what the user does while it
plays (``user``) and what each attempt's destinations may hold afterwards.  A test runs
the application against ``case.scenario`` doing ``case.user``, then calls
``case.check(recorder, trace)``: the audit must be clean (``assert_clean``) and every
attempt must have the expected release status and destination contents.

``user`` is one of:

* ``read`` -- ask, and read the answer to its end;
* ``stop`` -- ask, and press Stop once the first text was shown;
* ``stop_then_retry`` -- ask, press Stop once the first text was read, then Retry while
  the old stream is still delivering, and read the retry to its end;
* ``read_then_stop`` -- ask, read the answer to its end, then press Stop.

What a destination may hold: ``answer`` (one write, exactly the attempt's released
answer), ``nothing`` (no write) or ``cut_off`` (one write marked cut off, whose text the
audit judges against what the attempt's stream carried).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tracestore
from tracestore.errors import NotFound

USER_ACTIONS = ("read", "stop", "stop_then_retry", "read_then_stop")
HOLDS = ("answer", "nothing", "cut_off")


@dataclass(frozen=True)
class ExpectedAttempt:
    status: str
    "The release status the audit must find (released, stopped, failed …)."
    ui: tuple[str, ...]
    "What the UI may hold: any of ``answer``, ``nothing``, ``cut_off``."
    history: tuple[str, ...]


@dataclass(frozen=True)
class ConformanceCase:
    name: str
    seed: str
    "The seed 003 case it comes from."
    description: str
    scenario: Path
    "The mock scenario to run the application against."
    user: str
    "What the user does while it plays (see the module's docstring)."
    question: str
    task: dict[str, Any]
    "The task rule to record the turn with: the seed's, against which the answer passes."
    attempts: tuple[ExpectedAttempt, ...]
    "Per attempt of the turn, in the order they started."

    def check(self, source: Any, trace: str) -> None:
        """Fail unless ``trace`` (recorded by the application for this case, into the
        recorder or store ``source``) audits clean and each attempt's destinations hold
        what this case allows."""
        from tracestore.api import Store
        from tracestore.mock.pytest_plugin import assert_clean

        assert_clean(source, trace)
        store = Store(getattr(source, "store", source))
        report = store.audit(trace)
        cut_off = {e.position for e in store.events(trace=trace)
                   if getattr(e.event, "shown_as", None) == "cut_off"}
        found = [a for a in report.attempts if a.trace_id == trace]
        problems = []
        if len(found) != len(self.attempts):
            problems.append(f"{len(found)} attempt(s), the case has {len(self.attempts)}")
        for n, (attempt, want) in enumerate(zip(found, self.attempts)):
            if attempt.decision.status != want.status:
                problems.append(f"attempt {n} ({attempt.attempt_id}) is "
                                f"{attempt.decision.status}, the case expects {want.status}")
            for destination, allowed in (("ui", want.ui), ("history", want.history)):
                held = _holds(attempt, destination, cut_off)
                if held not in allowed:
                    problems.append(f"attempt {n} ({attempt.attempt_id}): {destination} holds "
                                    f"{held}, the case allows {' or '.join(allowed)}")
        if problems:
            raise AssertionError(f"conformance case {self.name}: " + "; ".join(problems))


def _holds(attempt: Any, destination: str, cut_off: set[int]) -> str:
    writes = attempt.destinations.get(destination, ())
    if not writes:
        return "nothing"
    if len(writes) > 1:
        return f"{len(writes)} writes"
    text = writes[0].text
    answer = attempt.decision.answer
    if answer is not None and text == answer:
        return "answer"
    if writes[0].position in cut_off:
        return "cut_off"
    return f"other text ({text[:40]!r})"


def conformance_dir() -> Path:
    """The pack: the checkout's ``fixtures/conformance/``, else the installed copy."""
    package = Path(tracestore.__file__).resolve().parent
    for candidate in (package.parent / "fixtures" / "conformance", package / "_conformance"):
        if (candidate / "cases.json").is_file():
            return candidate
    raise NotFound("no conformance pack found (checked the checkout and the installed "
                   "package)", code="conformance_pack_missing")


def cases() -> list[ConformanceCase]:
    """Every case of the pack, in the pack's order."""
    folder = conformance_dir()
    doc = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    out = []
    for case in doc["cases"]:
        if case["user"] not in USER_ACTIONS:
            raise ValueError(f"conformance case {case['name']}: unknown user {case['user']!r}")
        attempts = []
        for want in case["attempts"]:
            for field in ("ui", "history"):
                unknown = set(want[field]) - set(HOLDS)
                if unknown:
                    raise ValueError(f"conformance case {case['name']}: {field} {unknown}")
            attempts.append(ExpectedAttempt(want["status"], tuple(want["ui"]),
                                            tuple(want["history"])))
        out.append(ConformanceCase(
            name=case["name"], seed=case["seed"], description=case["description"],
            scenario=folder / case["scenario"], user=case["user"],
            question=case.get("question", doc["question"]),
            task=case.get("task", doc["task"]), attempts=tuple(attempts)))
    return out


def case(name: str) -> ConformanceCase:
    """One case by name (``KeyError`` naming the pack's cases if there is none)."""
    for found in cases():
        if found.name == name:
            return found
    raise KeyError(f"no conformance case {name!r}; the pack has "
                   f"{', '.join(c.name for c in cases())}")


__all__ = ["ConformanceCase", "ExpectedAttempt", "case", "cases", "conformance_dir"]
