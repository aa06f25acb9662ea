"""Output contracts (seeds 000 and 004): loading, strict replies, URL rule, regression lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracestore.cli import app
from tracestore.contracts.binding import context_of, parse_binding_bytes
from tracestore.contracts.judge import judge_reply
from tracestore.contracts.model import load_contract, parse_contract_bytes
from tracestore.contracts.regression import parse_cases, run_cases
from tracestore.contracts.urls import check_url
from tracestore.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "contracts"
HOSTS = ("help.kestrelcycles.example",)


def contract(name: str):  # type: ignore[no-untyped-def]
    return parse_contract_bytes((FIXTURES / f"{name}.json").read_bytes())


SEED004 = contract("seed004-faq")
SEED000 = contract("seed000-rag")
V1 = {"schema_version": 1, "answer": "You can return a new bike within 30 days.",
      "cited_ids": ["kc-returns-v3"], "confidence": "high", "status": "answered"}
V2 = {**V1, "schema_version": 2, "links": ["https://help.kestrelcycles.example/returns"]}
RETRIEVED = context_of({"selected_context": [{"source_id": "kc-returns-v3"},
                                             {"source_id": "kc-returns-v3-bn"}]})


@pytest.mark.parametrize(("payload", "code"), [
    (V1, "ok"), (V2, "ok"), ({**V2, "schema_version": 3}, "unknown_version"),
    ({**V1, "links": []}, "invalid_schema"),          # v1 keeps its old rules
    ({**V2, "schema_version": True}, "unknown_version"),  # True == 1, but is no version
    ({k: v for k, v in V2.items() if k != "schema_version"}, "unknown_version"),
    ({**V2, "cited_ids": ["a"] * 6}, "invalid_schema"),
    ({**V2, "answer": ""}, "invalid_schema"),
    ({**V2, "answer": "x" * 1001}, "invalid_schema"),
    ({**V2, "links": ["https://help.kestrelcycles.example/" + "a" * 200]}, "invalid_schema"),
])
def test_seed004_versions_and_schema(payload: dict, code: str) -> None:
    assert judge_reply(SEED004, json.dumps(payload), RETRIEVED).code == code


def test_a_version_2_reply_reads_its_links_and_resolves_citations_from_the_binding() -> None:
    bound = context_of({"selected_context": [
        {"source_id": "kc-returns-v3", "chunk_id": "kc-returns-v3:1",
         "url": "https://help.kestrelcycles.example/returns"}]})
    verdict = judge_reply(SEED004, json.dumps(V2), bound)
    assert verdict.ok and verdict.version == 2 and verdict.citations_checked
    assert [c.to_dict() for c in verdict.citations] == [
        {"source_id": "kc-returns-v3", "chunk_id": "kc-returns-v3:1",
         "url": "https://help.kestrelcycles.example/returns"}]
    assert verdict.reply["links"] == ["https://help.kestrelcycles.example/returns"]


def test_without_a_binding_citations_are_not_called_checked() -> None:
    verdict = judge_reply(SEED004, json.dumps(V2))
    assert verdict.ok and not verdict.citations_checked and verdict.citations == ()


@pytest.mark.parametrize(("text", "reasons"), [
    ('{"a": 1, "a": 2}', ("invalid_json", "duplicate_json_key")),
    ('{"answer": NaN}', ("invalid_json", "invalid_json_constant")),
    ('[Infinity]', ("invalid_json", "invalid_json_constant")),
    ("[" * 40 + "]" * 40, ("invalid_json", "json_too_deep")),
    ("Sure! It is 30 days.", ("invalid_json",)),
    ("", ("invalid_json",)),
])
def test_strict_json_failures_name_their_cause(text: str, reasons: tuple[str, ...]) -> None:
    assert judge_reply(SEED004, text).reasons() == reasons


def test_size_is_checked_before_parsing_and_never_cut() -> None:
    verdict = judge_reply(SEED004, '{"a": "' + "x" * 5000)  # not even JSON: size decides
    assert verdict.code == "too_large"
    assert verdict.problems[0].to_dict() == {"loc": "(top)", "msg": "5007 bytes; the limit is 4000"}


def test_untrusted_values_fail_for_their_own_reason() -> None:
    verdict = judge_reply(SEED004, json.dumps(
        {**V2, "cited_ids": ["kc-returns-v3", "kc-privacy-v1"]}),
        context_of({"selected_context": [{"source_id": "kc-returns-v3"}]}))
    assert verdict.code == "untrusted_value" and verdict.kind == "unknown_citation"
    assert [p.to_dict() for p in verdict.problems] == [
        {"loc": "cited_ids/1",
         "msg": "cited id 'kc-privacy-v1' is not in the context bound to this request"}]
    verdict = judge_reply(SEED004, json.dumps({**V2, "links": ["http://evil.test/x"]}), RETRIEVED)
    assert verdict.code == "untrusted_value" and verdict.kind == "untrusted_link"
    assert verdict.problems[0].msg == "link 'http://evil.test/x': scheme 'http' is not https"


@pytest.mark.parametrize(("url", "problem"), [
    ("https://help.kestrelcycles.example/returns", None),
    ("http://help.kestrelcycles.example/returns", "scheme 'http' is not https"),
    ("javascript:alert(1)", "scheme 'javascript' is not https"),
    ("https://help.kestrelcycles.example.evil.test/",
     "host 'help.kestrelcycles.example.evil.test' is not allowed"),
    ("https://help.kestrelcycles.example@evil.test/", "credentials in the URL"),
    # seed 004's "Easy" exercise: port allowed, upper-case scheme allowed, trailing dot not
    ("https://help.kestrelcycles.example:8443/x", None),
    ("HTTPS://help.kestrelcycles.example/", None),
    ("https://help.kestrelcycles.example./x", "host 'help.kestrelcycles.example.' is not allowed"),
    ("https://HELP.kestrelcycles.example/x", None),
    ("https://help.kestrelcycles.example:99999/x", "not a valid URL"),
    ("https://help.kestrelcycles.example/a b", "has whitespace or control characters"),
    ("https://help.kestrelcycles.example/\u202e", "has whitespace or control characters"),
    ("", "empty, or not text"),
    (7, "empty, or not text"),
])
def test_url_rule(url: object, problem: str | None) -> None:
    assert check_url(url, HOSTS) == problem


SEED000_REPLY = {"status": "answered", "answer": "Yes, an existing file is overwritten.",
                 "source_ids": ["path-write"]}
# the seed's own passages (a chunk id is the digest of its text and URL: issue 19 checks it)
SEED000_CONTEXT = context_of({"selected_context": json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures/seed000/replace-file.binding.json")
    .read_text(encoding="utf-8"))["selected_context"]})


@pytest.mark.parametrize(("patch", "reasons"), [
    ({}, ("ok",)),
    ({"extra": 1}, ("invalid_answer_schema",)),
    ({"status": "maybe"}, ("invalid_answer_schema",)),
    ({"answer": "   "}, ("invalid_answer_schema",)),
    ({"answer": 3}, ("invalid_answer_schema",)),
    ({"source_ids": ["path-write", "path-write"]}, ("invalid_answer_schema",)),
    ({"source_ids": [""]}, ("invalid_answer_schema",)),
    ({"source_ids": ["path-read"]}, ("unknown_context_citation",)),  # in the corpus, not bound
    ({"source_ids": []}, ("status_citation_mismatch",)),
    ({"status": "not_in_docs"}, ("status_citation_mismatch",)),
])
def test_seed000_reply_validation(patch: dict, reasons: tuple[str, ...]) -> None:
    text = json.dumps({**SEED000_REPLY, **patch})
    assert judge_reply(SEED000, text, SEED000_CONTEXT).reasons() == reasons


def test_seed000_refuses_lone_surrogates_and_uses_its_own_json_codes() -> None:
    assert judge_reply(SEED000, '{"status": "answered", "answer": "\\ud800", "source_ids": '
                       '["path-write"]}', SEED000_CONTEXT).code == "invalid_answer_schema"
    assert judge_reply(SEED000, '{"status": "answered", "status": "answered"}').reasons() == (
        "invalid_answer_json", "duplicate_json_key")


def test_seed004_nine_regression_lines_pass() -> None:
    cases = parse_cases((FIXTURES / "seed004-failures.jsonl").read_text(encoding="utf-8"))
    results = run_cases(SEED004, cases)
    assert [(r.name, r.got) for r in results] == [
        ("v1 good", "ok"), ("future version", "unknown_version"),
        ("prose, not JSON", "invalid_json"), ("cut mid-string, stop says end", "invalid_json"),
        ("cut off, stop says length", "truncated"), ("refusal-like stop", "unusable_stop"),
        ("unexpected extra key", "invalid_schema"), ("path-like id", "invalid_schema"),
        ("reply over the byte limit", "too_large")]
    assert all(r.passed for r in results)


def test_seed004_hard_exercise_lines() -> None:
    lines = "\n".join(json.dumps(c) for c in (
        {"name": "six ids", "patch": {"cited_ids": ["a"] * 6}, "expect": "invalid_schema"},
        {"name": "empty answer", "patch": {"answer": ""}, "expect": "invalid_schema"},
        {"name": "version 3", "patch": {"schema_version": 3}, "expect": "unknown_version"}))
    assert [r.got for r in run_cases(SEED004, parse_cases(lines))] == [
        "invalid_schema", "invalid_schema", "unknown_version"]


runner = CliRunner()


def test_contract_check_prints_one_line_per_case_and_exits_1_on_mismatch(tmp_path: Path) -> None:
    result = runner.invoke(app, ["contract", "check", str(FIXTURES / "seed004-failures.jsonl"),
                                 "--contract", str(FIXTURES / "seed004-faq.json")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "pass v1 good: expect ok, got ok"
    assert lines[-1] == "9 of 9 cases pass (seed004-faq)"
    assert len(lines) == 10
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"name": "\\u001b[31mred", "patch": {}, "expect": "invalid_schema"}\n')
    result = runner.invoke(app, ["contract", "check", str(wrong),
                                 "--contract", str(FIXTURES / "seed004-faq.json")])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "FAIL \\x1b[31mred: expect invalid_schema, got ok"


@pytest.mark.parametrize(("doc", "code"), [
    ([], "invalid_contract"),
    ({"contract": "x"}, "invalid_contract"),
    ({"contract": "x", "versions": [{"version": None, "schema": {"type": "nope"}}],
      "max_reply_bytes": 10}, "invalid_contract"),
    ({"contract": "x", "versions": [{"version": 1, "schema": {}}], "max_reply_bytes": 10},
     "invalid_contract"),  # versioned schema without version_field
    ({"contract": "x", "versions": [{"version": None, "schema": {}}], "max_reply_bytes": 10,
      "identifier_pattern": "^(a+)+$", "citation_field": "ids"}, "unsafe_pattern"),
    ({"contract": "x", "versions": [{"version": None, "schema": {}}], "max_reply_bytes": 10,
      "identifier_pattern": "(", "citation_field": "ids"}, "invalid_pattern"),
    ({"contract": "x", "versions": [{"version": None, "schema": {}}], "max_reply_bytes": 10,
      "codes": {"bogus": "y"}}, "invalid_contract"),
    ({"contract": "x", "versions": [{"version": None, "schema": {"type": "object"}}],
      "max_reply_bytes": 100, "example": []}, "invalid_contract"),
])
def test_bad_contracts_are_refused_with_a_code(doc: object, code: str) -> None:
    with pytest.raises(InputError) as caught:
        load_contract(doc)
    assert caught.value.code == code


def test_contract_and_binding_files_must_be_strict_json() -> None:
    with pytest.raises(InputError) as caught:
        parse_contract_bytes(b'{"contract": "a", "contract": "b"}')
    assert caught.value.code == "invalid_contract"
    for bad in (b"[]", b'{"selected_context": [{"source_id": ""}]}', b"{", b'{"a": NaN}',
                b'{"selected_context": [{"source_id": "a"}, {"source_id": "a"}]}'):
        with pytest.raises(InputError) as caught:
            parse_binding_bytes(bad)
        assert caught.value.code == "invalid_binding"


def test_bad_contract_file_on_the_cli_is_one_sentence_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "c.json"
    bad.write_text('{"contract": "x", "versions": [], "max_reply_bytes": 1}')
    result = runner.invoke(app, ["contract", "check", str(FIXTURES / "seed004-failures.jsonl"),
                                 "--contract", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith("error[invalid_contract]: the contract is not valid: versions")
