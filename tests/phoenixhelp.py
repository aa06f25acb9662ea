"""Arize Phoenix for the export tests: ``phoenix serve`` on 127.0.0.1 (a module fixture)
and its spans read back through its REST API.

Phoenix is heavy and pins its own dependencies, so it lives in its own virtual
environment: ``TRACESTORE_PHOENIX`` names its ``phoenix`` executable (``.ci/run`` installs
``arize-phoenix`` into ``.ci/phoenix-venv`` and sets it); else a ``phoenix`` on PATH is
used.  Without one a test that asks for it is skipped with that reason, except under
``CI=true``, where it fails.  Phoenix starts once per module (about 15 s), with telemetry
off.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, reply.read()
    except OSError:
        return 0, b""


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    executable = os.environ.get("TRACESTORE_PHOENIX") or shutil.which("phoenix")
    if not executable or not Path(executable).exists():
        reason = ("no Phoenix: set TRACESTORE_PHOENIX to a `phoenix` executable "
                  "(pip install arize-phoenix into its own venv; .ci/run does)")
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(_free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PHOENIX_ENABLE_AUTH": "false"}
    for name in [n for n in env if n.startswith("OTEL_")]:
        del env[name]
    log = (work / "phoenix.log").open("wb")
    process = subprocess.Popen([executable, "serve"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while get(base + "/healthz")[0] != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (work / "phoenix.log").read_text("utf-8", "replace")[-2000:]
                pytest.fail(f"Phoenix did not start (exit {process.poll()}):\n{tail}")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        log.close()


def phoenix_spans(base: str, project: str, expected: int) -> list[dict]:
    """The project's spans through Phoenix's REST API, once all ``expected`` arrived."""
    deadline = time.monotonic() + 30
    while True:
        status, body = get(f"{base}/v1/projects/{project}/spans?limit=100")
        spans = json.loads(body)["data"] if status == 200 else []
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)
