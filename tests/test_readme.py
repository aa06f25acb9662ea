"""The README's commands work as written (sqlite-utils' habit: docs that are tested).

* the set-up test command is exactly what ``.ci/run`` runs;
* the main-job command's tracestore steps run against a fresh store;
* every ``$ tracestore …`` line in the README's console blocks runs, in order, against one
  fresh store, and every output line the README shows matches (``…`` stands for "anything",
  and hash prefixes vary with the recording time).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracestore.cli import app

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
runner = CliRunner()


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, re.S)


def test_the_readme_has_exactly_two_setup_commands() -> None:
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = [line for block in re.findall(r"```bash\n(.*?)```", setup, re.S)
                for line in block.strip().splitlines()]
    assert len(commands) == 2
    assert "tracestore replay fixtures/seed003" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_command = bash_blocks()[1].strip()
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def tracestore_steps(command: str) -> list[list[str]]:
    return [shlex.split(part.strip())[1:] for part in command.split("&&")
            if part.strip().split(" ")[0].endswith("tracestore")]


@pytest.fixture
def fresh_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "readme.db"
    monkeypatch.setenv("TRACESTORE_DB", f"sqlite:///{db}")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(REPO)
    return db


def test_main_job_runs(fresh_store: Path) -> None:
    steps = tracestore_steps(bash_blocks()[0])
    assert steps == [["replay", "fixtures/seed003"], ["audit"]]
    for args in steps:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    assert "23 scenarios" in runner.invoke(app, steps[0]).stdout


#: Pages whose console blocks run, each against its own fresh store, with the least number
#: of ``$ tracestore`` lines each must hold (so a page cannot silently lose its examples).
DOC_PAGES = {
    "README.md": 9, "docs/tutorial.md": 10, "docs/how-to/record-captures.md": 5,
    "docs/how-to/record-python.md": 5, "docs/how-to/structured-answers.md": 5,
    "docs/how-to/agent-runs.md": 5, "docs/how-to/export.md": 4,
    "docs/how-to/gate-ci.md": 4, "docs/how-to/test-your-app.md": 1,
}


def console_sessions(text: str = README) -> list[tuple[list[str], list[str]]]:
    """(args, expected output lines) for each ``$ tracestore`` line in console blocks."""
    sessions: list[tuple[list[str], list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ tracestore "):
                command = line[2:].split("  #", 1)[0].strip()
                sessions.append((shlex.split(command)[1:], []))
            elif sessions and line.strip():
                sessions[-1][1].append(line)
    return sessions


def line_pattern(expected: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in expected.split("…")]
    pattern = ".*".join(parts)
    pattern = re.sub(r"head\\ [0-9a-f]{16}", r"head\\ [0-9a-f]{16}", pattern)
    return re.compile(pattern)


def test_every_page_with_console_blocks_is_run() -> None:
    """The README, the tutorial and every how-to page: a new page with commands is run."""
    candidates = [REPO / "README.md", REPO / "docs" / "tutorial.md",
                  *(REPO / "docs" / "how-to").glob("*.md")]
    pages = {str(p.relative_to(REPO)) for p in candidates
             if console_sessions(p.read_text(encoding="utf-8"))}
    assert pages <= set(DOC_PAGES), pages - set(DOC_PAGES)


@pytest.mark.parametrize("page", sorted(DOC_PAGES))
def test_every_console_line_runs_and_shows_what_the_page_says(fresh_store: Path,
                                                               page: str) -> None:
    sessions = console_sessions((REPO / page).read_text(encoding="utf-8"))
    assert len(sessions) >= DOC_PAGES[page]
    for args, expected in sessions:
        # Files the walkthrough writes (report --html, reviewer keys) go to the test's
        # folder, not the repo.
        args = [str(fresh_store.parent / a)
                if prev in ("--html", "--out", "--key", "--by-key", "--public-key", "keygen") else a
                for prev, a in zip(["", *args], args)]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
        output = result.stdout.splitlines()
        for line in expected:
            assert any(line_pattern(line).fullmatch(out) for out in output), (args, line, output)
