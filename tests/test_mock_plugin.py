"""The pytest plugin, as an application's own test uses it: the official openai client
streams from ``tracestore_mock`` through a recording transport into ``tracestore_recorder``,
and ``assert_clean`` is the oracle (a leaked stopped answer fails it, naming the leak)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracestore.mock.pytest_plugin import assert_clean

# text-usage-moderation-gpt-5.sse: see fixtures/real/PROVENANCE.md
CHAT = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "openai-chat" / \
    "text-usage-moderation-gpt-5.sse"


def _stopped_turn(tracestore_mock, tracestore_recorder, tmp_path: Path, write: str) -> object:
    import httpx2
    import openai

    from tracestore.recording import attempt_of
    from tracestore.recording.httpx_capture import RecordingTransport

    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"exchanges": [{
        "path": "/v1/chat/completions", "capture": str(CHAT),
        "faults": {"chunk_bytes": 300, "delay_ms": 15}}]}))
    mock = tracestore_mock(scenario)
    client = openai.OpenAI(base_url=f"{mock.url}/v1", api_key="sk-test", max_retries=0,
                           http_client=httpx2.Client(transport=RecordingTransport()))
    with tracestore_recorder.turn("q", task={"answer_patterns": [r"\w"]}):
        stream = client.chat.completions.create(
            model="gpt-5", stream=True, messages=[{"role": "user", "content": "Hi?"}])
        attempt = attempt_of(stream)
        shown = ""
        for chunk in stream:
            shown += "".join(c.delta.content or "" for c in chunk.choices)
            if shown:
                break
        stream.close()  # the user pressed Stop
        attempt.destination(write, shown, **({"cut_off": True} if write == "ui" else {}))
    client.close()
    return mock


def test_a_stop_shown_cut_off_is_clean(tracestore_mock, tracestore_recorder,
                                       tmp_path: Path) -> None:
    mock = _stopped_turn(tracestore_mock, tracestore_recorder, tmp_path, "ui")
    assert_clean(tracestore_recorder, "q")
    import time

    for _ in range(200):  # the server notices the client left at its next write
        if mock.log[0]["client_left_at"] is not None:
            break
        time.sleep(0.02)
    assert 0 < mock.log[0]["client_left_at"] < CHAT.stat().st_size


def test_a_stopped_answer_saved_to_history_fails_with_the_leak(
        tracestore_mock, tracestore_recorder, tmp_path: Path) -> None:
    _stopped_turn(tracestore_mock, tracestore_recorder, tmp_path, "history")
    with pytest.raises(AssertionError) as failed:
        assert_clean(tracestore_recorder, "q")
    assert str(failed.value).startswith("1 violation(s) in trace q:\n  #")
    assert "ineligible_text_in_destination" in str(failed.value)


def test_the_how_to_test_runs_as_written(tmp_path: Path) -> None:
    """docs/how-to/test-your-app.md's test, run by pytest from the repository root as a user
    runs theirs: the plugin's fixtures come from the installed entry point."""
    import re
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    page = (repo / "docs" / "how-to" / "test-your-app.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    for sketch in blocks:  # the conformance sketch drives an app of the reader's own
        compile(sketch, "test-your-app.md", "exec")
    (block,) = [b for b in blocks if "def test_stop_shows" in b]
    assert len(block.strip().splitlines()) <= 25
    test = tmp_path / "test_users_app.py"
    test.write_text(block)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "-c", "/dev/null", str(test)],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_readme_shows_the_how_to_test_and_the_mock_command() -> None:
    import re

    repo = Path(__file__).resolve().parents[1]
    readme = (repo / "README.md").read_text(encoding="utf-8")
    page = (repo / "docs" / "how-to" / "test-your-app.md").read_text(encoding="utf-8")
    first = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    assert first in re.findall(r"```python\n(.*?)```", readme, re.S)  # the one that runs
    assert "tracestore mock fixtures/mock/chat.json --listen 127.0.0.1:8788" in readme
