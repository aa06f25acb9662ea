"""The recorder examples of docs/how-to/record-python.md and docs/recording.md run as written:
each Python block is executed unchanged against the local capture server, the SDKs pointed
at it by their own environment variables, in a fresh working directory."""

from __future__ import annotations

import contextlib
import gc
import io
import re
from pathlib import Path

import pytest

from capture_server import CaptureServer, route_for
from conftest import FIXTURES

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
pytestmark = pytest.mark.usefixtures("frozen_heap")

REPO = Path(__file__).resolve().parents[1]
REAL = FIXTURES / "real"


def python_blocks(path: Path, section: str) -> list[str]:
    text = path.read_text(encoding="utf-8").split(section, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.fixture
def sdk_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with CaptureServer() as server:
        server.routes["/v1/chat/completions"] = route_for(
            REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse", chunk=64)
        server.routes["/v1/messages"] = route_for(REAL / "anthropic" / "text-basic.sse",
                                                  chunk=64)
        server.routes["/converse-stream"] = route_for(REAL / "bedrock" / "nova-micro-text.bin",
                                                      chunk=100)
        for name, value in {
                "OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "test",
                "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test",
                "AWS_ENDPOINT_URL": server.url, "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(tmp_path)
        yield server
    gc.collect()


def run(*blocks: str, namespace: dict[str, object] | None = None, **names: object) -> str:
    out = io.StringIO()
    namespace = namespace if namespace is not None else {}
    namespace.update({"__name__": "__docs__", **names})
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, "<docs>", "exec"), namespace)  # noqa: S102 - our own docs
    namespace["rec"].close()  # type: ignore[attr-defined]
    return out.getvalue()


@pytest.mark.parametrize("writer", ["thread", "auto"])
def test_the_python_how_to_example_runs_and_is_released(sdk_env, monkeypatch,
                                                        writer: str) -> None:
    """As written, with the suite's writer thread and with the package's default (the
    example's store is a SQLite file: the process writer)."""
    (block,) = python_blocks(REPO / "docs" / "how-to" / "record-python.md",
                             "# Record a Python application")
    assert "attempts[-1]" not in block and "attempt_of(stream)" in block
    monkeypatch.setenv("TRACESTORE_WRITER", writer)
    namespace: dict[str, object] = {}
    assert run(block, namespace=namespace).split() == ["released"]
    transport = namespace["attempt"]._body.owner  # type: ignore[attr-defined]
    assert (transport.process is not None) == (writer == "auto")
    transport.close()


def test_the_recorder_api_example_runs_as_written(sdk_env) -> None:
    block = python_blocks(REPO / "docs" / "recording.md", "## The recorder API")[0]
    body = (REAL / "anthropic" / "text-basic.sse").read_bytes()
    chunks = [body[i:i + 50] for i in range(0, len(body), 50)]
    out = run(block, response_body=chunks, shown_text="Hello", stored_text="Hello")
    assert out.split() == ["rejected"]  # its task wants Paris; this capture says Hello


def test_the_sdk_capture_examples_run_as_written(sdk_env) -> None:
    sdk, bedrock, framework = python_blocks(REPO / "docs" / "recording.md",
                                            "## SDK capture: record an application")
    assert run(sdk, bedrock).split() == ["released", "released", "released"]
    pytest.importorskip("langchain_openai")
    assert run(framework).split() == ["released"]  # LangChain through the same transport
