"""docs/providers.md's table of wild-corpus decisions is exactly what the code decides
(``tools/wild_decisions.py`` generates it; regenerate, never edit)."""

from __future__ import annotations

from pathlib import Path

from conftest import load_tool

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- wild-decisions:begin (python tools/wild_decisions.py) -->\n"
END = "<!-- wild-decisions:end -->"


def generator():  # noqa: ANN202 - tools/wild_decisions.py as a module
    return load_tool("wild_decisions")


def test_the_wild_table_is_what_the_code_decides_and_counts_every_body() -> None:
    doc = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    table = doc[doc.index(BEGIN) + len(BEGIN):doc.index(END)]
    module = generator()
    assert table == module.render()
    counts = [int(row.split(" | ")[3]) for row in table.splitlines()[2:]]
    assert sum(counts) == len(module.decisions()) == 1014


def test_every_held_or_refused_reason_has_its_one_line() -> None:
    module = generator()
    reasons = {r for _, _, status, r in module.decisions() if status != "released"}
    assert reasons <= set(module.WHY)
