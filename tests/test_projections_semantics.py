"""Semantic acceptance: the seed 003 task rule as data, matched case-insensitively on NFC."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from tracestore.errors import InputError
from tracestore.events import TaskRule
from tracestore.projections.semantics import judge, judge_semantics, validate_rule

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
RULE = TaskRule.model_validate(json.loads((FIXTURES / "t1.json").read_text())["task"])


def test_every_fixture_carries_the_same_rule() -> None:
    for path in FIXTURES.glob("*.json"):
        assert TaskRule.model_validate(json.loads(path.read_text())["task"]) == RULE, path.name


@pytest.mark.parametrize("text", [
    "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday.",
    "Wednesday: 09:00–17:00 UTC. Thursday: closed.",
    "THE DESK IS OPEN ON WEDNESDAY, 9:00 TO 17:00 UTC, AND CLOSED ON THURSDAY.",
    "Open Wednesday 9 am to 5 pm (UTC); closed Thursday.",
    "It is closed Thursday; on Wednesday it opens 09:00-17:00 UTC.",
])
def test_faithful_phrasings_are_accepted(text: str) -> None:
    assert judge_semantics(RULE, text) == ("accepted", ())


@pytest.mark.parametrize("text", [
    "The desk opens Thursday.",                                              # T5
    "The public desk opens Wednesday from 09:00 to 17:00 UTC.",             # Thursday lost
    "The public desk opens Wednesday from 09:00 to 17:00. Closed Thursday.",  # UTC lost
    "Open Wednesday 09:00–17:00 UTC and Thursday 10:00–12:00 UTC; closed Friday.",
    "Wednesday 09:00–18:00 UTC; closed Thursday.",                          # invented hour
    "Wednesday 09:00–17:00 UTC, also 7 pm; closed Thursday.",
    "Open Wednesday 09:00-17:00 UTC. Thursday: open from noon, otherwise closed.",
    "Wednesday and Thursday 09:00 to 17:00 UTC, closed weekends.",
])
def test_unfaithful_phrasings_are_rejected(text: str) -> None:
    verdict, failed = judge_semantics(RULE, text)
    assert verdict == "rejected" and failed


def test_t5_fails_answer_and_forbidden_patterns_in_rule_order() -> None:
    verdict, failed = judge_semantics(RULE, "The desk opens Thursday.")
    assert verdict == "rejected"
    missing = [p for p in RULE.answer_patterns if p in failed]
    forbidden = [p for p in RULE.forbidden_patterns if p in failed]
    assert failed == tuple(missing + forbidden)
    assert len(missing) == 5 and forbidden == [r"\bopens?\s+(?:on\s+)?thursdays?\b"]


def test_matching_is_nfc_normalised_on_both_sides() -> None:
    rule = TaskRule(answer_patterns=(unicodedata.normalize("NFD", "café"),))
    assert judge_semantics(rule, unicodedata.normalize("NFC", "Le Café ouvre"))[0] == "accepted"
    assert judge_semantics(rule, unicodedata.normalize("NFD", "LE CAFÉ"))[0] == "accepted"


def test_judgement_carries_the_answer_hash() -> None:
    j = judge(RULE, "x")
    assert j.answer_sha256 == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"


def test_invalid_pattern_is_input_error() -> None:
    with pytest.raises(InputError) as info:
        validate_rule(TaskRule(answer_patterns=("(unclosed",)))
    assert info.value.code == "invalid_pattern"


@pytest.mark.parametrize("pattern", ["(a+)+$", "(\\w+\\s?)*x", "(ab|c+)*", "(?=(a*)*b)"])
def test_patterns_that_can_backtrack_exponentially_are_refused(pattern: str) -> None:
    from tracestore.errors import InputError
    from tracestore.projections.semantics import validate_rule

    with pytest.raises(InputError) as caught:
        validate_rule(TaskRule(answer_patterns=(pattern,)))
    assert caught.value.code == "unsafe_pattern"


@pytest.mark.parametrize("pattern", ["a+b+", "(a|b)+", "(?:\\d{2}:\\d{2})+", "x{1,3}(y+)"])
def test_ordinary_repeats_are_fine(pattern: str) -> None:
    from tracestore.projections.semantics import validate_rule

    validate_rule(TaskRule(answer_patterns=(pattern,)))


# --- issue 26 item 5: a task rule never hangs the judge -------------------------------------

_BOUNDED = """
import json, sys, time
from pathlib import Path
import tracestore.projections.semantics as S
S.MATCH_TIMEOUT = 0.2  # the bound, made short for the test
from tracestore.events import TaskRule
from typer.testing import CliRunner
from tracestore.cli import app

folder = Path(sys.argv[1])
words = "paris " * 100_000  # 100k words, never "france": quadratic backtracking
started = time.perf_counter()
j = S.judge(TaskRule(answer_patterns=(r"\\bparis\\b.*\\bfrance\\b",)), words)
catastrophic = S.judge(TaskRule(answer_patterns=(r"(a|a)*b",)), "a" * 30)
body = [{"type": "response.output_text.delta", "sequence_number": 0, "item_id": "m",
         "output_index": 0, "content_index": 0, "delta": words},
        {"type": "response.completed", "sequence_number": 9,
         "response": {"id": "r", "status": "completed"}},
        {"local": "drain", "outcome": "clean"}]
(folder / "c.json").write_text(json.dumps(body))
(folder / "task.json").write_text(json.dumps({"answer_patterns": [r"\\bparis\\b.*\\bfrance\\b"]}))
db = str(folder / "s.db")
run = CliRunner().invoke
ingested = run(app, ["ingest", str(folder / "c.json"), "--attempt", "p", "--task",
                     str(folder / "task.json"), "--db", db])
release = json.loads(run(app, ["release", "p", "--json", "--db", db]).stdout)
print(json.dumps({"timed_out": j.timed_out, "verdict": j.verdict,
                  "catastrophic": [catastrophic.verdict, catastrophic.timed_out],
                  "ingest": ingested.exit_code, "status": release["status"],
                  "reasons": release["reasons"], "seconds": time.perf_counter() - started}))
"""


def test_a_backtracking_rule_is_bounded_and_holds_the_release(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _BOUNDED, str(tmp_path)], capture_output=True,
                          text=True, timeout=30)  # before the fix: past 60 s, killed here
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["timed_out"] == [r"\bparis\b.*\bfrance\b"] and out["verdict"] == "rejected"
    assert out["catastrophic"] == ["rejected", []]  # (a|a)*b over 30 a's: an answer, at once
    assert (out["ingest"], out["status"], out["reasons"]) == (0, "held", ["rule_timeout"])
    assert out["seconds"] < 15


def test_a_rule_that_backtracks_on_a_probe_is_refused_when_loaded() -> None:
    # A bounded repeat of an unbounded one passes the shape check ((a+)+ is refused by it)
    # but takes exponential time on repeated words: the load-time probes catch it.
    with pytest.raises(InputError) as caught:
        validate_rule(TaskRule(answer_patterns=(r"(.*a){15}z",)))
    assert caught.value.code == "unsafe_pattern" and "probe" in caught.value.message
    validate_rule(RULE)  # the seed's rule passes its probes


def test_a_long_answer_hashes_a_slice_at_a_time_to_the_whole_texts_digest():
    import hashlib

    from tracestore.projections import semantics

    # past one slice, with multi-byte characters and a lone surrogate on the slice edges
    edge = semantics._HASH_SLICE
    text = ("é" * (edge - 1) + "\ud83d" + "😀" * 3 + "x" * edge + "\udc00")
    whole = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    assert len(text) > 2 * edge
    assert semantics.sha256_text(text) == whole
    assert semantics.sha256_text("Paris") == hashlib.sha256(b"Paris").hexdigest()
