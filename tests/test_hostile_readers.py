"""Issue 26: one hostile-input suite for every reader of untrusted files.

Readers: ``ingest`` (captures), ``replay`` (scenarios), ``import`` (exports), task rules
(``--task``), contracts (``--contract``), request bindings (``--binding``), regression case
files, and review templates.  Hostile contents: deep nesting, huge numbers, lone
surrogates, raw control bytes, bytes that are not UTF-8, a huge line, wrong types.  Each
must end with a typed error carrying a stable code, or be stored faithfully -- never exit
70, never over 5 s.  A hypothesis property test covers task rules (patterns run over
untrusted text) with a short default run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clihelp import runner
from tracestore.cli import app

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin"
CONTRACT = REPO / "fixtures" / "contracts" / "seed004-faq.json"
CASES = REPO / "fixtures" / "contracts" / "seed004-failures.jsonl"

HOSTILE: dict[str, bytes] = {
    "deep array": b"[" * 100_000 + b"]" * 100_000,
    "deep object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "5000-digit number": b'{"answer_patterns": [' + b"9" * 5000 + b"]}",
    "lone surrogate": b'{"answer_patterns": ["\\ud800"], "trace": "\\udfff"}',
    "raw control bytes": b'{"a": "\x00\x1b[2J\xc2\x9b"}\n\x00\x1b\x07',
    "not UTF-8": b"\xff\xfe\x00\x80{",
    "wrong types": b'{"answer_patterns": 5, "steps": "x", "trace": [], "schema_version": {}}',
    "a list of nulls": b"[null, null, 1e999, -1e400]",
    "empty": b"",
}
HUGE_LINE = b'{"x": "' + b"a" * (9 * 1024 * 1024) + b'"}\n'  # past the 8 MiB frame bound


def _readers(path: Path) -> dict[str, list[str]]:
    return {
        "ingest": ["ingest", str(path), "--attempt", "h"],
        "replay": ["replay", str(path)],
        "import": ["import", str(path)],
        "task rule": ["ingest", str(CAPTURE), "--attempt", "h", "--task", str(path)],
        "contract": ["contract", "check", str(CASES), "--contract", str(path)],
        "binding": ["contract", "check", str(CASES), "--contract", str(CONTRACT),
                    "--binding", str(path)],
        "regression cases": ["contract", "check", str(path), "--contract", str(CONTRACT)],
    }


READERS = list(_readers(Path("x")))
CASES_TABLE = [(reader, name) for reader in READERS for name in HOSTILE] + \
    [("ingest", "huge line"), ("import", "huge line"), ("replay", "huge line")]


@pytest.mark.parametrize("reader, content", CASES_TABLE,
                         ids=[f"{r}: {c}" for r, c in CASES_TABLE])
def test_a_hostile_file_is_a_typed_error_or_stored(tmp_path: Path, reader: str,
                                                   content: str) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(HUGE_LINE if content == "huge line" else HOSTILE[content])
    args = _readers(path)[reader]
    started = time.perf_counter()
    result = runner.invoke(app, [*args, "--json", "--db", str(tmp_path / "s.db")])
    assert time.perf_counter() - started < 5
    assert result.exit_code in (0, 1, 2, 3), (result.exit_code, result.stderr[-300:],
                                              repr(result.exception))
    if result.exit_code != 0 and not (reader == "regression cases" and result.exit_code == 1
                                      and not result.stderr):
        error = json.loads(result.stderr.strip().splitlines()[-1])
        assert isinstance(error["error"], str) and error["error"], result.stderr


@pytest.mark.parametrize("content", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_review_template_is_a_typed_error(tmp_path: Path, content: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tracestore.errors import TracestoreError
    from tracestore.review import templates

    (tmp_path / "evil.json").write_bytes(HOSTILE[content])
    monkeypatch.setattr(templates, "templates_dir", lambda: tmp_path)
    with pytest.raises(TracestoreError) as caught:
        templates.load_template("evil")
    assert caught.value.code


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=st.text(alphabet="a()|*+?.\\bsw{},[]^$-0123456789", max_size=14),
       text=st.text(max_size=200))
def test_any_task_rule_is_refused_or_judged_in_bounded_time(pattern: str, text: str) -> None:
    from tracestore.errors import InputError
    from tracestore.events import TaskRule
    from tracestore.projections.semantics import judge, validate_rule

    rule = TaskRule(answer_patterns=(pattern,))
    started = time.perf_counter()
    try:
        validate_rule(rule)
    except InputError as exc:
        assert exc.code in ("invalid_pattern", "unsafe_pattern")
        return
    judged = judge(rule, text * 50)
    assert judged.verdict in ("accepted", "rejected")
    assert time.perf_counter() - started < 5
