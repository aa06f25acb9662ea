"""Issue 26: every output -- terminal tables, Markdown records, the HTML report, JSON
lines, the export -- neutralizes control and bidi characters the same way (one shared
neutralizer, ``tracestore.text.neutralize``), checked with one hostile fixture through every
command that shows model text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clihelp import runner
from hostile import HOSTILE, assert_inert, hostile_store
from tracestore.cli import app

COMMANDS = [
    ["events"], ["events", "--json"], ["attempts"], ["attempts", "--json"],
    ["release", "h"], ["release", "h", "--json"], ["audit"], ["audit", "--json"],
    ["review", "h"], ["review", "h", "--json"],
    ["report", "h", "--html", "-"],
    ["export", "--format", "jsonl"], ["export", "--format", "jsonl", "--redact", "text"],
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_store(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_output_is_inert(db: Path, command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--db", str(db)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, (command, result.stderr)
    assert_inert(result.stdout, keep="\n\t")
    if command[0] == "review" and "--json" in command:
        json.loads(result.stdout)  # one indented document
    elif "--json" in command or "jsonl" in command:
        for line in result.stdout.splitlines():  # one JSON document a line, text intact
            json.loads(line)


def test_json_and_html_keep_the_text_recoverable(db: Path) -> None:
    release = runner.invoke(app, ["release", "h", "--json", "--db", str(db)])
    assert json.loads(release.stdout)["answer"] == HOSTILE  # escapes decode to the original
    page = runner.invoke(app, ["report", "h", "--html", "-", "--db", str(db)]).stdout
    # The same visible escapes the terminal shows: \x00, \x1b, \x9b, \u202e, \ud800.
    for shown in ("Paris\\x00 is \\x1b[31mred", "France\\x9b2J\\x85", "\\u202eecnarF",
                  "z\\ud800 end"):
        assert shown in page, shown


def test_the_one_neutralizer_is_used_everywhere() -> None:
    from tracestore.cli.common import safe_text
    from tracestore.text.neutralize import visible
    from tracestore.report.html import _neutralized
    from tracestore.review.escape import json_text, md_cell

    assert safe_text(HOSTILE) == visible(HOSTILE, keep="")
    assert _neutralized(HOSTILE) == visible(HOSTILE, keep="\n\t")
    assert md_cell(HOSTILE).replace("\\[", "[") == visible(HOSTILE, keep="")  # md: [ too
    assert json.loads(json_text(HOSTILE)) == HOSTILE
    assert_inert(json_text(HOSTILE))
