"""The live turn as Phoenix's own UI shows it: Debian's Chromium driven by Playwright.

The T8-shaped turn of ``test_export_live_phoenix`` (a stopped attempt, then its released
retry, recorded through the real ``openai`` client with its prompt) is exported with
``--content`` to a real Phoenix (``phoenixhelp``: skipped without ``TRACESTORE_PHOENIX``,
failed under ``CI=true``), and its trace page is opened.  What is asserted is on the
rendered page: the turn's root span and both attempt spans, by name.  Beside it, the same
two calls are made through OpenInference's own ``openai`` instrumentation (run in
Phoenix's environment, which has it) into the same Phoenix, and that trace page is opened
too.  The screenshots are kept under ``build/test-artifacts/`` (git-ignored);
``TRACESTORE_UPDATE_DOCS=1`` also refreshes ``docs/phoenix-turn.png`` and
``docs/phoenix-openinference.png`` for docs/how-to/export.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

from capture_server import CaptureServer, route_for
from clihelp import run
from phoenixhelp import get, phoenix, phoenix_spans  # noqa: F401 - a fixture
from test_export_live_phoenix import CAPTURE, MESSAGES, PACE, STOP_AFTER, record_turn
from test_report_browser import ARTIFACTS, browser  # noqa: F401 - the shared fixture

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
#: A long run (a real Phoenix): `pytest -m slow` runs it, and so does .ci/run.
pytestmark = [pytest.mark.usefixtures("frozen_heap"), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1440, 900


def project_id(base: str, name: str) -> str:
    status, body = get(f"{base}/v1/projects?limit=100")
    assert status == 200
    [project] = [p for p in json.loads(body)["data"] if p["name"] == name]
    return str(project["id"])


def trace_page(browser: object, base: str, project: str, trace_id: str, shown: list[str],
               shot: Path) -> None:
    """Open Phoenix's page of one trace, wait until every name in ``shown`` is on it, and
    take its screenshot to ``shot``."""
    context = browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(f"{base}/projects/{project_id(base, project)}/traces/{trace_id}",
                  wait_until="load", timeout=60_000)
        for name in shown:
            page.get_by_text(name, exact=True).first.wait_for(state="visible", timeout=60_000)
        page.wait_for_timeout(1000)  # let the span details settle before the picture
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot))
    finally:
        context.close()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


#: The same two calls as ``record_turn`` (a stream the application stops after
#: ``STOP_AFTER`` chunks, then its retry read to the end), through OpenInference's
#: instrumentation of the ``openai`` client, exported to Phoenix by the OTel SDK.
OPENINFERENCE = textwrap.dedent("""
    import json, sys
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    base, endpoint, project, stop_after = sys.argv[1:5]
    messages = json.loads(sys.argv[5])
    provider = TracerProvider(resource=Resource({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=base, api_key="test", max_retries=0)
    for stop in (int(stop_after), None):
        stream = client.chat.completions.create(model="gpt-5", stream=True,
                                                messages=messages)
        for n, chunk in enumerate(stream, 1):
            if n == stop:
                break
        stream.close()
    provider.shutdown()
""")


def openinference_python() -> Path | None:
    """The Python of Phoenix's environment, when it has OpenInference's instrumentation."""
    executable = os.environ.get("TRACESTORE_PHOENIX")
    if not executable:
        return None
    python = Path(executable).with_name("python")
    probe = subprocess.run([str(python), "-c",
                            "import openinference.instrumentation.openai, openai"],
                           capture_output=True)
    return python if probe.returncode == 0 else None


def test_phoenix_shows_the_turn_with_its_attempts_as_children(
        tmp_path: Path, phoenix: str, browser: object,  # noqa: F811 - the fixture
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "turn.db"
    trace_id = "live-turn"
    lived = record_turn(db, trace_id, leak=True)
    assert lived.statuses == ["stopped", "released"]
    project = f"tracestore-turn-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    code, _, err = run("export", "--format", "otlp", "--content", "--endpoint",
                       phoenix + "/v1/traces", db=db)
    assert code == 0, err
    spans = phoenix_spans(phoenix, project, 3)
    [root] = [s for s in spans if s["parent_id"] is None]
    assert root["name"] == f"turn {trace_id}" and root["status_code"] == "ERROR"
    assert sorted(s["name"] for s in spans if s is not root) == ["chat gpt-5-2025-08-07"] * 2

    shot = ARTIFACTS / "phoenix-turn.png"
    trace_page(browser, phoenix, project, root["context"]["trace_id"],
               [f"turn {trace_id}", "chat gpt-5-2025-08-07"], shot)
    if os.environ.get("TRACESTORE_UPDATE_DOCS"):
        (REPO / "docs" / "phoenix-turn.png").write_bytes(shot.read_bytes())


def test_openinference_shows_the_same_calls_as_two_unrelated_traces(
        phoenix: str, browser: object) -> None:  # noqa: F811 - the fixture
    python = openinference_python()
    if python is None:
        reason = "Phoenix's environment has no openinference-instrumentation-openai"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    project = f"openinference-{uuid.uuid4().hex[:8]}"
    with CaptureServer() as server:
        server.routes["/v1/chat/completions"] = route_for(CAPTURE, by_event=True, pace=PACE)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OTEL_", "PYTHON"))}
        done = subprocess.run(
            [str(python), "-c", OPENINFERENCE, f"{server.url}/v1", phoenix + "/v1/traces",
             project, str(STOP_AFTER), json.dumps(MESSAGES)],
            env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    spans = phoenix_spans(phoenix, project, 2)
    # Each call is its own trace: nothing says the second retried the first.
    assert len(spans) == 2 and all(s["parent_id"] is None for s in spans)
    assert len({s["context"]["trace_id"] for s in spans}) == 2
    assert {s["name"] for s in spans} == {"ChatCompletion"}
    retry = max(spans, key=lambda s: s["start_time"])

    shot = ARTIFACTS / "phoenix-openinference.png"
    trace_page(browser, phoenix, project, retry["context"]["trace_id"], ["ChatCompletion"],
               shot)
    if os.environ.get("TRACESTORE_UPDATE_DOCS"):
        (REPO / "docs" / "phoenix-openinference.png").write_bytes(shot.read_bytes())


def test_the_docs_screenshots_exist() -> None:
    for name in ("phoenix-turn.png", "phoenix-openinference.png"):
        png = REPO / "docs" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
