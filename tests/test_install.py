"""The README's install gives every command it lists.

A fresh virtual environment gets exactly the README's ``pip install -e .`` (no extra), and
then every command's ``--help``, the main job, the desk, the proxy and an OTLP post to a
local endpoint run from it: none may end in ``internal error`` for a missing module.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

#: A long run: `pytest -m slow` runs it, and so does .ci/run.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _readme_install_line() -> str:
    """The first set-up command's install part, as the README spells it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"\.venv/bin/pip install -q (-e \S+)", readme)
    assert match, "the README's set-up command no longer installs with pip"
    return match.group(1)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("fresh-venv")
    subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
    editable, target = _readme_install_line().split()
    assert (editable, target) == ("-e", "."), "update this test with the README's install"
    subprocess.run([str(home / "venv" / "bin" / "pip"), "install", "-q", "-e", str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    return home / "venv"


def _run(venv: Path, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACESTORE_")}
    env["PYTHONPATH"] = ""
    return subprocess.run([str(venv / "bin" / "tracestore"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _commands() -> list[str]:
    from tracestore.cli import COMMAND_HOMES

    return sorted(COMMAND_HOMES)


def test_every_command_has_help_from_the_plain_install(venv: Path, tmp_path: Path) -> None:
    for command in _commands():
        done = _run(venv, command, "--help", cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.startswith(f"Usage: tracestore {command}"), command
        assert "internal error" not in done.stderr


def test_the_main_job_runs_from_the_plain_install(venv: Path, tmp_path: Path) -> None:
    replayed = _run(venv, "replay", str(ROOT / "fixtures" / "seed003"), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    audited = _run(venv, "audit", "--json", cwd=tmp_path)
    assert audited.returncode == 0, audited.stderr
    assert json.loads(audited.stdout)["attempts"]
    assert (tmp_path / "tracestore.db").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _until_line(proc: subprocess.Popen[str], needle: str, limit: float = 60) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + limit
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return line
    proc.kill()
    raise AssertionError(f"no {needle!r} line; stderr: {''.join(seen)}")


@pytest.fixture
def started(venv: Path, tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _spawn(venv: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACESTORE_")}
    env["PYTHONPATH"] = ""
    return subprocess.Popen([str(venv / "bin" / "tracestore"), *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_the_desk_serves_from_the_plain_install(venv: Path, tmp_path: Path,
                                                started: list[subprocess.Popen[str]]) -> None:
    assert _run(venv, "replay", str(ROOT / "fixtures" / "seed003" / "t7.json"),
                cwd=tmp_path).returncode == 0
    port = _free_port()
    desk = _spawn(venv, tmp_path, "serve", "--port", str(port))
    started.append(desk)
    assert f"http://127.0.0.1:{port}/" in _until_line(desk, "the desk is at")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
        assert page.status == 200
        assert b"t7" in page.read()


class _Collector(http.server.BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("Content-Length", "0"))
        type(self).bodies.append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def test_export_posts_otlp_from_the_plain_install(venv: Path, tmp_path: Path) -> None:
    assert _run(venv, "replay", str(ROOT / "fixtures" / "seed003" / "t7.json"),
                cwd=tmp_path).returncode == 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    _Collector.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        sent = _run(venv, "export", "--format", "otlp", "--endpoint", url, cwd=tmp_path)
    finally:
        server.shutdown()
    assert sent.returncode == 0, sent.stderr
    assert "internal error" not in sent.stderr
    assert _Collector.bodies and all(_Collector.bodies)


def test_the_proxy_listens_from_the_plain_install(venv: Path, tmp_path: Path,
                                                  started: list[subprocess.Popen[str]]) -> None:
    port = _free_port()
    proxy = _spawn(venv, tmp_path, "proxy", "--upstream", "http://127.0.0.1:9",
                   "--listen", f"127.0.0.1:{port}")
    started.append(proxy)
    assert f"listening on http://127.0.0.1:{port}" in _until_line(proxy, "listening on")
    # The upstream (discard port) refuses: the proxy answers for it instead of failing.
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code in (502, 504)


def test_a_missing_module_is_a_typed_error_not_a_bug(tmp_path: Path) -> None:
    """A command whose third-party import is missing says which package and how to get it."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    # A package that raises ModuleNotFoundError on import stands in for an absent one.
    (shadow / "httpx").mkdir()
    (shadow / "httpx" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'httpx'\", name='httpx')\n")
    env = {**os.environ, "PYTHONPATH": f"{shadow}{os.pathsep}{ROOT}"}
    env.pop("TRACESTORE_DEBUG", None)
    db = str(tmp_path / "x.db")
    base = [sys.executable, "-m", "tracestore"]
    subprocess.run([*base, "replay", str(ROOT / "fixtures" / "seed003" / "t7.json"), "--db",
                    db], env=env, check=True, capture_output=True, timeout=60)
    done = subprocess.run([*base, "export", "--format", "otlp", "--endpoint",
                           "http://127.0.0.1:9/v1/traces", "--db", db], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    assert done.stderr.startswith("error[missing_dependency]: this command needs the Python "
                                  "package 'httpx', which is not installed here: pip install")
