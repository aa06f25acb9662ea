"""Every provider has a one-text-answer profile: real captures get a decision, not no_profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracestore.cli import app
from tracestore.projections.profiles import DEFAULT_PROFILE_FOR_API, PROFILES
from tracestore.providers.base import PROVIDER_NAMES

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
runner = CliRunner()


def test_every_provider_has_a_default_profile() -> None:
    assert set(DEFAULT_PROFILE_FOR_API) == set(PROVIDER_NAMES)
    assert all(PROFILES[name].api == api for api, name in DEFAULT_PROFILE_FOR_API.items())


@pytest.mark.parametrize("capture, status, reasons", [
    ("anthropic/text-basic.sse", "released",
     ["normal_native_ending", "clean_drain", "semantic_accepted"]),
    ("anthropic/stop-sequence.sse", "held", ["unknown_stop_reason"]),
    ("anthropic/thinking-then-tool-use.sse", "held", ["non_text_content"]),
    ("gemini/sse-text.sse", "released",
     ["normal_native_ending", "clean_drain", "semantic_accepted"]),
    ("ollama/generate-granite-text.ndjson", "released",
     ["normal_native_ending", "clean_drain", "semantic_accepted"]),
    ("openai-chat/text-usage-moderation-gpt-5.sse", "released",
     ["normal_native_ending", "clean_drain", "semantic_accepted"]),
    ("openai-chat/tool-call-include-usage-gpt-4o-mini.sse", "held",
     ["tool_use_not_allowed"]),
    ("openai-responses/error-insufficient-quota.chunks.txt", "failed", ["native_failure"]),
    ("xai/chat-reasoning-text.chunks.txt", "held", ["non_text_content"]),
])
def test_real_capture_decisions(capture: str, status: str, reasons: list[str],
                                tmp_path: Path) -> None:
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"answer_patterns": ["\\S"]}))
    db = str(tmp_path / "p.db")
    ingested = runner.invoke(app, ["ingest", str(REAL / capture), "--attempt", "a",
                                   "--task", str(task), "--db", db])
    assert ingested.exit_code == 0, ingested.stderr
    result = runner.invoke(app, ["release", "a", "--json", "--db", db])
    decision = json.loads(result.stdout)
    assert (decision["status"], decision["reasons"]) == (status, reasons)
    assert (decision["answer"] is not None) == (status == "released")
