"""Issue 19 wild corpus: verdicts that were wrong on public recordings (fixtures/wild/),
each decided in-process as ``ingest --provider auto`` + ``release`` under an accept-any-text
rule (the helper of tools/real_decisions.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tracestore.errors import TracestoreError
from tracestore.projections import decide_release

ROOT = Path(__file__).resolve().parents[1]
WILD = ROOT / "fixtures" / "wild"


def _tool():  # noqa: ANN202 - a module loaded from its path
    spec = importlib.util.spec_from_file_location("real_decisions",
                                                  ROOT / "tools" / "real_decisions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


def decide(name: str) -> tuple[str, str, list[str]]:
    api, events = TOOL._events(WILD / name)
    d = decide_release(events, "a")
    return api, d.status, list(d.reasons)


def refusal(name: str) -> str:
    with pytest.raises(TracestoreError) as info:
        TOOL._events(WILD / name)
    return info.value.code


def test_openrouter_encrypted_reasoning_details_are_held() -> None:
    api, status, reasons = decide("openrouter/pyd__openrouter_stream_with_reasoning.sse")
    assert (api, status) == ("openai-chat", "held")
    assert reasons[0] == "non_text_content"
