"""docs/reference/cli.md is checked against the Typer app: every command has a row, every
row names a command, and every option a row mentions is an option of that command."""

from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from tracestore.cli import COMMAND_HOMES, app

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"


def _rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `tracestore ([a-z-]+)(?: ([a-z-]+)\b)?[^`]*` \| (.*) \|$", line)
        if match:
            rows[match.group(1)] = match.group(3)
    return rows


def _options(name: str) -> set[str]:
    command = get_command(app).commands[name]  # type: ignore[attr-defined]
    found = {opt for p in command.params for opt in getattr(p, "opts", [])}
    for sub in getattr(command, "commands", {}).values():  # a group: its subcommands' too
        found |= {opt for p in sub.params for opt in getattr(p, "opts", [])}
    return found


def test_every_command_has_exactly_one_row() -> None:
    assert sorted(_rows()) == sorted(COMMAND_HOMES)


def test_every_option_a_row_names_exists() -> None:
    wrong = {}
    for name, text in _rows().items():
        named = set(re.findall(r"(--[a-z][a-z-]*)", text))
        missing = named - _options(name)
        if missing:
            wrong[name] = sorted(missing)
    assert wrong == {}
