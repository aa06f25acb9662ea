"""docs/reference/events.md is the event models' own description (generated from them)."""

from __future__ import annotations

import re
from pathlib import Path

from tracestore.events import EVENT_TYPES, MODELS
from tracestore.events.reference import markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference" / "events.md"


def test_the_page_is_what_the_models_say() -> None:
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        "regenerate: python -m tracestore.events > docs/reference/events.md")


def test_every_kind_and_field_is_on_the_page() -> None:
    page = markdown()
    assert re.findall(r"^## `([a-z_.]+)`$", page, flags=re.M) == list(EVENT_TYPES)
    for name in EVENT_TYPES:
        section = page.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
        own = [f for f in MODELS[name].model_fields if f not in ("type", "id")]
        listed = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M)
        assert set(listed) <= set(own), (name, set(listed) - set(own))
        assert MODELS[name].__doc__, f"{name} has no docstring to describe it"
