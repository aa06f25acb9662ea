"""docs/providers.md's table of wild-corpus decisions is exactly what the code decides
(``tools/wild_decisions.py`` generates it; regenerate, never edit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import load_tool

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- wild-decisions:begin (python tools/wild_decisions.py) -->\n"
END = "<!-- wild-decisions:end -->"


def generator():  # noqa: ANN202 - tools/wild_decisions.py as a module
    return load_tool("wild_decisions")


@pytest.fixture(scope="module")
def module():  # noqa: ANN201 - one loaded generator for both tests (they only read it)
    # decisions() is cached per loaded module: loading it once decides the corpus once.
    return generator()


def test_the_wild_table_is_what_the_code_decides_and_counts_every_body(module) -> None:  # noqa: ANN001
    doc = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    table = doc[doc.index(BEGIN) + len(BEGIN):doc.index(END)]
    assert table == module.render()
    counts = [int(row.split(" | ")[3]) for row in table.splitlines()[2:]]
    assert sum(counts) == len(module.decisions()) == 1014


def test_every_held_or_refused_reason_has_its_one_line(module) -> None:  # noqa: ANN001
    reasons = {r for _, _, status, r in module.decisions() if status != "released"}
    assert reasons <= set(module.WHY)
