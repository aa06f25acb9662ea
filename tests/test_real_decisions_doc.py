"""docs/providers.md's table of release decisions under an accept-any-text rule is exactly
what the code decides (``tools/real_decisions.py`` generates it; regenerate, never edit)."""

from __future__ import annotations

from pathlib import Path

from conftest import load_tool

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- real-decisions:begin (python tools/real_decisions.py) -->\n"
END = "<!-- real-decisions:end -->"


def generator():  # noqa: ANN202 - tools/real_decisions.py as a module
    return load_tool("real_decisions")


def test_the_docs_table_is_what_the_code_decides() -> None:
    doc = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    table = doc[doc.index(BEGIN) + len(BEGIN):doc.index(END)]
    assert table == generator().render()


def test_every_real_capture_has_a_row() -> None:
    module = generator()
    names = [row[0] for row in module.rows()]
    on_disk = sorted(p.relative_to(module.REAL).as_posix() for p in module.REAL.rglob("*")
                     if p.is_file() and p.name != "PROVENANCE.md")
    assert names == on_disk and len(names) == 39


def test_no_reasoning_capture_is_released() -> None:
    """The README promise, on the real captures: only plain-text answers are released."""
    released = {row[0] for row in generator().rows() if row[2] == "released"}
    assert released == {
        "anthropic/text-basic.sse", "bedrock/nova-micro-text.bin", "gemini/sse-text.sse",
        "ollama/generate-granite-text.ndjson", "openai-chat/text-usage-moderation-gpt-5.sse",
        "openai-responses/background-queued.sse", "openai-responses/text-gpt-4o.sse"}
