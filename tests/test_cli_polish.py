"""The command line as people expect it: plain help, completion, python -m, stdin, errors.

Help pages are checked at 80 and 200 columns in a real process (the terminal width is read
when the program starts).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracestore.cli import app

from clihelp import run

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"
OPENAI = REPO / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"
COMMANDS = ("init", "ingest", "events", "attempts", "verify", "release", "replay", "audit",
            "review", "templates", "report", "export", "import", "destination", "task",
            "scenario-schema")


def cli(*args: str, columns: int = 80, stdin: bytes | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "TRACESTORE_DEBUG": ""}
    return subprocess.run([sys.executable, "-m", "tracestore", *args], input=stdin,
                          capture_output=True, env=env, cwd=cwd or REPO, timeout=120,
                          check=False, text=stdin is None)


def all_help(columns: int) -> str:
    script = ("import sys\nfrom tracestore.cli import app\nimport typer.main\n"
              "from typer.testing import CliRunner\nr = CliRunner()\n"
              f"for c in ['--help'] + [[c, '--help'] for c in {list(COMMANDS)!r}]:\n"
              "    res = r.invoke(app, c if isinstance(c, list) else [c], prog_name='tracestore',"
              f" terminal_width={columns})\n"
              "    sys.stdout.write(res.stdout + '\\n=====\\n')\n")
    env = {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    return done.stdout


@pytest.mark.parametrize("columns", [80, 200])
def test_help_pages_show_no_internals(columns: int) -> None:
    pages = all_help(columns)
    assert pages.count("=====") == len(COMMANDS) + 1
    for internal in ("<bool>", "<str>", "<path>", "<int", "list[", "{file}", "{attempt}",
                     "`", "TABLE_MAX_ROWS", "/ --no-", "[default: no-"):
        assert internal not in pages, internal
    cut = [line for line in pages.splitlines()
           if line.endswith("...") and not line.startswith("Usage:")]
    assert cut == []  # no summary cut mid-sentence
    # Constant names: none (environment variable names are what a user sets, so they stay).
    assert not re.search(r"(?<![$\w])(?!TRACESTORE_)[A-Z]+_[A-Z_]+\b", pages)
    assert "Usage: tracestore ingest [OPTIONS] FILE" in pages
    assert "Usage: tracestore replay [OPTIONS] FILES..." in pages
    assert "--format [md|json]" in pages and "--limit N" in pages
    for line in pages.splitlines():
        assert len(line) <= columns, line
        # Words are never split at a hyphen or underscore at the end of a line.
        assert not re.search(r"[A-Za-z][-_]$", line), line


def test_command_list_never_cuts_a_sentence() -> None:
    page = cli("--help").stdout
    commands = page.split("\nRecord:", 1)[1]  # the workflow's sections follow the options
    assert "..." not in commands
    summaries: dict[str, str] = {}
    for line in commands.strip("\n").splitlines():
        if not line.strip() or not line.startswith(" "):  # a blank line or a section title
            continue
        name, _, text = line.strip().partition(" ")
        if line.startswith("  ") and not line.startswith("   "):
            summaries[name] = text.strip()
        else:  # a continuation line of the previous summary
            summaries[list(summaries)[-1]] += " " + line.strip()
    assert set(COMMANDS) <= set(summaries)
    assert all(text.endswith(".") for text in summaries.values()), summaries
    assert summaries["release"] == ("Show an attempt's release decision: status, reasons, "
                                    "position, answer.")


def test_review_json_help_says_what_it_prints() -> None:
    page = cli("review", "--help", columns=200).stdout
    text = " ".join(page.split("  --json", 1)[1].split("  --help", 1)[0].split())
    assert text == ("Print the record as one JSON object (same as --format json): template, "
                    "attempt, every field with its value, source and evidence positions, and "
                    "the names of the UNKNOWN fields.")


def test_python_m_and_completion() -> None:
    done = cli("--version")
    assert done.returncode == 0 and done.stdout.startswith("tracestore ")
    script = cli("--show-completion", "bash")
    assert script.returncode == 0 and "_TRACESTORE_COMPLETE=complete_bash" in script.stdout
    env = {**os.environ, "_TRACESTORE_COMPLETE": "complete_bash",
           "COMP_WORDS": "tracestore review --format ", "COMP_CWORD": "3"}
    done = subprocess.run([sys.executable, "-m", "tracestore"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.stdout.split() == ["md", "json"]
    env.update(COMP_WORDS="tracestore rep", COMP_CWORD="1")
    done = subprocess.run([sys.executable, "-m", "tracestore"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.stdout.split() == ["replay", "report"]


def test_ingest_reads_standard_input(db_file: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", "-", "--json", "--db", str(db_file)],
                                input=OPENAI.read_bytes())
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["attempt_id"], summary["api"], summary["frames"]) == (
        "stdin-d03a397c", "openai-responses", 15)
    assert "warnings" not in summary


def test_ingest_warns_when_the_named_provider_recognized_nothing(db_file: Path) -> None:
    code, stdout, stderr = run("ingest", str(OPENAI), "--provider", "anthropic-messages",
                               "--json", db=db_file)
    assert code == 0
    assert json.loads(stdout)["warnings"] == [
        "--provider anthropic-messages recognized none of the 15 frames; is this capture "
        "from another provider? (--provider auto tells them apart)"]
    code, _, stderr = run("ingest", str(OPENAI), "--attempt", "b", "--provider",
                          "anthropic-messages", db=db_file)
    assert code == 0 and stderr.startswith("warning: --provider anthropic-messages")
    code, _, stderr = run("ingest", str(OPENAI), "--attempt", "c", "--provider",
                          "openai-responses", db=db_file)
    assert code == 0 and "warning" not in stderr


@pytest.fixture
def t7_db(db_file: Path) -> Path:
    assert run("replay", str(SEED / "t7.json"), "--json", db=db_file)[0] == 0
    return db_file


@pytest.mark.parametrize("args, exit_code, error", [
    (["events", "--attempt", "nope"], 4, "attempt_not_found"),
    (["events", "--trace", "nope"], 4, "trace_not_found"),
    (["audit", "--trace", "nope"], 4, "trace_not_found"),
    (["release", "nope"], 4, "attempt_not_found"),
    (["review", "nope"], 4, "attempt_not_found"),
    (["report", "nope", "--html", "-"], 4, "trace_not_found"),
    (["export", "--trace", "nope"], 4, "trace_not_found"),
    (["review", "t7", "--set", "nofield=x", "--reviewer", "a"], 2, "unknown_field"),
])
def test_one_code_per_meaning_and_the_database_is_named(
        t7_db: Path, args: list[str], exit_code: int, error: str) -> None:
    code, _, stderr = run(*args, "--json", db=t7_db)
    doc = json.loads(stderr)
    assert (code, doc["error"]) == (exit_code, error)
    if exit_code == 4:
        assert doc["database"] == str(t7_db) and doc["message"].endswith(f"(database {t7_db})")
    code, _, stderr = run(*args, db=t7_db)
    assert code == exit_code and stderr.startswith(f"error[{error}]")


def test_a_missing_template_does_not_blame_the_database(t7_db: Path) -> None:
    code, _, stderr = run("review", "t7", "--template", "nope", "--json", db=t7_db)
    doc = json.loads(stderr)
    assert (code, doc["error"]) == (4, "unknown_template")
    assert "database" not in doc and "(database" not in doc["message"]


@pytest.mark.parametrize("args, message", [
    (["release"], "Missing argument 'attempt'."),
    (["review", "t7", "--format", "xml"], "'xml' is not one of 'md', 'json'."),
    (["export", "--format", "csv"], "'csv' is not one of 'jsonl', 'otlp'."),
    (["events", "--limit", "0"], "--limit"),
])
def test_argument_errors_honour_json(db_file: Path, args: list[str], message: str) -> None:
    code, stdout, stderr = run(*args, "--json", db=db_file)
    doc = json.loads(stderr)
    assert code == 2 and doc["error"] == "usage_error" and message in doc["message"]
    assert stdout == ""
    assert "Value error" not in doc["message"]
    code, _, stderr = run(*args, db=db_file)
    assert code == 2 and message in stderr and not stderr.startswith("{")
    assert "Value error" not in stderr


def test_out_files_get_the_normal_mode_and_missing_folders_are_named(
        t7_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "t7.md"
    assert run("review", "t7", "--out", str(out), db=t7_db)[0] == 0
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    missing = tmp_path / "no-such-folder" / "t7.md"
    code, _, stderr = run("review", "t7", "--out", str(missing), "--json", db=t7_db)
    doc = json.loads(stderr)
    assert code == 2 and doc["error"] == "file_error"
    assert doc["message"] == f"cannot write {missing}: folder {missing.parent} does not exist"
    assert ".tmp" not in doc["message"]


def test_verify_explains_its_root(t7_db: Path) -> None:
    code, stdout, _ = run("verify", db=t7_db)
    first, second = stdout.splitlines()
    assert code == 0 and re.fullmatch(r"ok \d+ events in \d+ traces? \(root [0-9a-f]{16}\)",
                                      first)
    assert "times it was recorded" in second and "another store" in second
    readme = (REPO / "README.md").read_text("utf-8")
    assert "ok 10 events in 1 trace (root …)" in readme
    assert not re.search(r"root [0-9a-f]{16}", readme)
