"""Every ``--json`` command follows docs/json.md, checked on one small store.

* Every command with a ``--json`` option (found in the Typer app: a new command without a
  case here fails) runs and exits 0.
* Its stdout is one JSON object on one line, or -- ``events``, the one stream -- JSON lines,
  one object each; each line is exactly what the one writer (``cli.common.json_document``)
  writes for its value: one line, ``, `` / ``: `` separators, controls escaped.
* A key means one thing in one shape everywhere (``KEY_SHAPES``), except the old keys kept
  for one release (``ALIASES``, listed in docs/json.md).
* An error with ``--json`` is one such object on stderr, stdout empty.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tests.conftest import PG_URL
from tracestore.cli import app
from tracestore.cli.common import json_document

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

#: command → (arguments, form).  ``{tmp}`` is the test's folder; ``{db}`` adds --db.
#: The order builds the store: each case may use what the earlier ones recorded.
CASES: dict[str, tuple[list[str], str]] = {
    "init": (["{db}"], "object"),
    "replay": (["fixtures/seed003/t7.json", "{db}"], "object"),
    "ingest": (["fixtures/projections/s1.json", "--attempt", "s1", "{db}"], "object"),
    "ingest-batch": (["fixtures/real/anthropic/text-basic.sse", "{db}"], "object"),
    "task": (["s1", "--task", "{tmp}/judged.json", "{db}"], "object"),
    "destination": (["s1", "ui", "--text-file", "{tmp}/answer.txt", "{db}"], "object"),
    "judge": (["s1", "accept", "--reviewer", "carol", "{db}"], "object"),
    "events": (["--trace", "s1", "{db}"], "lines"),
    "attempts": (["{db}"], "object"),
    "verify": (["{db}"], "object"),
    "release": (["t7", "{db}"], "object"),
    "audit": (["{db}"], "object"),
    "review": (["t7", "{db}"], "object"),
    "templates": ([], "object"),
    "evidence": (["t7", "--kind", "ticket", "--file", "{tmp}/answer.txt", "--reviewer",
                  "alice", "{db}"], "object"),
    "reviews": (["{db}"], "object"),
    "review-batch": (["--status", "stopped", "--set", "evidence_gap=y", "--reviewer", "alice",
                      "--dry-run", "{db}"], "object"),
    "grade": (["{db}"], "object"),
    "reviewer keygen": (["{tmp}/alice.key"], "object"),
    "reviewer add": (["alice", "--public-key", "{tmp}/alice.key.pub", "{db}"], "object"),
    "reviewer list": (["{db}"], "object"),
    "reviewer unsigned": (["allow", "{db}"], "object"),
    "checkpoint": (["--key", "{tmp}/alice.key", "{db}"], "object"),
    "report": (["t7", "--html", "{tmp}/t7.html", "{db}"], "object"),
    "export": (["--out", "{tmp}/all.jsonl", "{db}"], "object"),
    "import": (["{tmp}/all.jsonl", "--db", "{tmp}/copy.db"], "object"),
    "contract check": (["fixtures/contracts/seed004-failures.jsonl", "--contract",
                        "fixtures/contracts/seed004-faq.json"], "object"),
    # ``{pg}``: --db a new PostgreSQL database (the case is skipped without a server)
    "store partition": (["{pg}"], "object"),
}
#: More runs of commands above, in other modes, checked the same way (run first: grade needs
#: the agent run in the store).
EXTRA: dict[str, tuple[str, list[str]]] = {
    "ingest (agent run)": ("ingest", ["fixtures/agent/mutations/unissued-read.json", "{db}"]),
    "checkpoint --generate-key": ("checkpoint", ["--generate-key", "{tmp}/ck.key"]),
}


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _record(v: Any) -> bool:
    return isinstance(v, dict)


def _attempt(v: Any) -> bool:
    return isinstance(v, dict) and isinstance(v.get("attempt_id"), str)


#: One shape per key, wherever it appears (docs/json.md, "Same names for the same things").
KEY_SHAPES: dict[str, Callable[[Any], bool]] = {
    # lists of records
    "attempts": _list_of(_attempt), "violations": _list_of(_record),
    "runs": _list_of(_attempt), "reviews": _list_of(_record), "records": _list_of(_record),
    "files": _list_of(_record), "cases": _list_of(_record), "reviewers": _list_of(_record),
    "templates": _list_of(_record), "fields": _list_of(_record),
    "approvals": _list_of(_record),
    # counts: <singular>_count, and the things no command lists inside an object
    "attempt_count": _is_int, "violation_count": _is_int, "run_count": _is_int,
    "partition_count": _is_int, "row_count": _is_int,
    "events": _is_int, "frames": _is_int, "blobs": _is_int, "lines": _is_int,
    "appended": _is_int, "skipped": _is_int,
    # ids, positions, codes
    "attempt_id": _is_str, "trace_id": lambda v: v is None or isinstance(v, str),
    "attempt_ids": _list_of(_is_str), "position": lambda v: v is None or _is_int(v),
    "positions": _list_of(_is_int), "decisions_recorded": _list_of(_is_int),
    "reasons": _list_of(_is_str), "status": _is_str, "api": _is_str, "kind": _is_str,
    "sha256": lambda v: v is None or bool(re.fullmatch(r"[0-9a-f]{64}", v)),
    "key_id": _is_str, "error": _is_str, "message": _is_str,
}
#: (command, key) pairs that keep their old shape for one release (docs/json.md, "Aliases").
ALIASES = {
    ("report", "attempts"), ("report", "violations"),  # counts: attempt_count, violation_count
    ("attempts", "violations"),  # a row's count: violation_count
    ("ingest", "attempts"), ("ingest", "runs"),  # attempt_ids, run_count
    ("ingest-batch", "attempts"), ("ingest-batch", "runs"),
}


def json_commands() -> set[str]:
    """Every command (``group sub`` for sub-commands) that has a ``--json`` option."""
    found: set[str] = set()

    def walk(command: Any, path: list[str]) -> None:
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        elif any("--json" in getattr(p, "opts", ()) for p in command.params):
            found.add(" ".join(path))

    walk(typer.main.get_command(app), [])
    return found


def _args(args: list[str], tmp: Path) -> list[str]:
    out: list[str] = []
    for arg in args:
        if arg == "{db}":
            out += ["--db", str(tmp / "store.db")]
        elif arg == "{pg}":
            from tests.conftest import _fresh_pg_url

            out += ["--db", _fresh_pg_url()]
        else:
            out.append(arg.replace("{tmp}", str(tmp)))
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory,
            ) -> dict[str, tuple[int, str, str]]:
    tmp = tmp_path_factory.mktemp("json")
    (tmp / "judged.json").write_text(json.dumps(
        {"description": "judged by a person", "semantic": "reviewer"}), encoding="utf-8")
    (tmp / "answer.txt").write_text("The capital of France is Paris.", encoding="utf-8")
    results: dict[str, tuple[int, str, str]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        mp.delenv("TRACESTORE_DB", raising=False)
        for name, (command, args) in EXTRA.items():
            result = runner.invoke(app, [command, *_args(args, tmp), "--json"])
            results[name] = (result.exit_code, result.stdout, result.stderr)
        for command, (args, _) in CASES.items():
            if "{pg}" in args and not PG_URL:
                continue
            result = runner.invoke(app, [*command.split(), *_args(args, tmp), "--json"])
            results[command] = (result.exit_code, result.stdout, result.stderr)
        error = runner.invoke(app, ["release", "nope", "--db", str(tmp / "store.db"),
                                    "--json"])
        results["<error>"] = (error.exit_code, error.stdout, error.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    return results


def test_every_json_command_has_a_case() -> None:
    assert json_commands() == set(CASES)


#: Subtrees in another vocabulary: an event's payload is the event schema (docs/store.md).
OTHER_VOCABULARIES = ("payload",)


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key, item
            if key not in OTHER_VOCABULARIES:
                yield from _walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, f"{path}[]")


def check_document(command: str, line: str) -> list[str]:
    problems = []
    doc = json.loads(line)
    if not isinstance(doc, dict):
        return [f"{command}: a {type(doc).__name__}, not an object"]
    if line != json_document(doc):
        problems.append(f"{command}: not the one JSON form: {line[:120]}")
    for where, key, value in _walk(doc):
        if key in KEY_SHAPES and not KEY_SHAPES[key](value):
            top_alias = where == "" or where == ".files[]" or where == ".attempts[]"
            if not ((command, key) in ALIASES and top_alias):
                problems.append(f"{command}: {where}.{key} = {str(value)[:80]} breaks its shape")
    return problems


@pytest.mark.parametrize("case", [*CASES, *EXTRA])
def test_the_output_follows_the_convention(outputs: dict[str, tuple[int, str, str]],
                                           case: str) -> None:
    if case not in outputs:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    code, stdout, stderr = outputs[case]
    assert code == 0, stderr
    lines = stdout.splitlines()
    command = EXTRA[case][0] if case in EXTRA else case
    form = CASES[command][1]
    assert lines and stdout.endswith("\n")
    if form == "object":
        assert len(lines) == 1, f"{command} wrote {len(lines)} lines, not one object"
    problems = [p for line in lines for p in check_document(command, line)]
    assert problems == []


def test_the_aliases_are_the_old_keys_beside_the_new_ones(
        outputs: dict[str, tuple[int, str, str]]) -> None:
    report = json.loads(outputs["report"][1])
    assert (report["attempts"], report["violations"]) == (
        report["attempt_count"], report["violation_count"])
    rows = json.loads(outputs["attempts"][1])["attempts"]
    assert rows and all(r["violations"] == r["violation_count"] for r in rows)
    runs = json.loads(outputs["ingest (agent run)"][1])
    assert (runs["attempts"], runs["runs"], runs["format"]) == (
        runs["attempt_ids"], runs["run_count"], runs["kind"]) == (
        ["overwrite-agent-1--unissued-read"], 1, "agent-result")


def test_an_error_is_one_object_on_stderr(outputs: dict[str, tuple[int, str, str]]) -> None:
    code, stdout, stderr = outputs["<error>"]
    assert (code, stdout) == (4, "")
    (line,) = stderr.splitlines()
    assert check_document("<error>", line) == []
    assert json.loads(line)["error"] == "attempt_not_found"


def test_the_checker_is_not_vacuous() -> None:
    # pretty-printed, and a key in another shape, are both caught
    assert check_document("x", json.dumps({"a": 1}, indent=2).replace("\n", ""))
    assert check_document("x", json_document({"attempts": 2}))
    assert check_document("report", json_document({"attempts": 2})) == []
