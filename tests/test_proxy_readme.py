"""The proxy how-to (docs/how-to/record-any-language.md) runs as written: its bash lines, against a fake upstream on
127.0.0.1 instead of api.openai.com and a free port instead of 8787, show its text blocks."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

from proxy_upstream import Upstream, route_for
from proxyhelp import RESPONSES
from test_proxy_clients import client_run

REPO = Path(__file__).resolve().parents[1]
SECTION = (REPO / "docs" / "how-to" / "record-any-language.md").read_text(encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _matches(expected: str, output: str) -> bool:
    pattern = ".*".join(re.escape(p) for p in expected.split("…"))
    return any(re.fullmatch(pattern, line) for line in output.splitlines())


def test_the_readme_proxy_section_runs_and_shows_what_it_says(tmp_path) -> None:
    client_run("node")  # skips (or fails under CI=true) without node and tests/node
    commands = [line.strip() for block in re.findall(r"```bash\n(.*?)```", SECTION, re.S)
                for line in block.strip().splitlines()]
    shown = re.findall(r"```text\n(.*?)```", SECTION, re.S)
    assert len(commands) == 4 and len(shown) == 2
    # A fresh clone has no node_modules: the section's first line installs the client.
    assert commands[0] == "npm ci --prefix tests/node --no-audit --no-fund"
    installed = subprocess.run(shlex.split(commands.pop(0)), cwd=REPO, capture_output=True,
                               text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    assert (REPO / "tests" / "node" / "node_modules" / "openai" / "package.json").exists()
    port = str(_free_port())
    env = {**os.environ, "OPENAI_API_KEY": "sk-readme-SECRET", "TRACESTORE_DB": ""}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    with Upstream() as upstream:
        upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)

        def local(command: str) -> str:
            return (command.replace("https://api.openai.com", upstream.url)
                    .replace("8787", port).replace("app.db", str(tmp_path / "app.db")))

        proxy_line = local(commands[0])
        assert proxy_line.endswith(" &")
        # the README's default --listen 127.0.0.1:8787, on a free port here
        args = shlex.split(proxy_line[:-2]) + ["--listen", f"127.0.0.1:{port}"]
        proxy = subprocess.Popen(args, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
        try:
            assert "listening on" in proxy.stderr.readline()
            # the line comes once the socket accepts: a script may connect at once
            socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
            app = subprocess.run(local(commands[1]), shell=True, cwd=REPO, env=env,
                                 capture_output=True, text=True, timeout=60)
            assert app.returncode == 0, app.stderr
            for line in shown[0].strip().splitlines():
                assert _matches(line, app.stdout), (line, app.stdout)
        finally:
            proxy.terminate()
            proxy.wait(30)
            proxy.stderr.close()
        audit = subprocess.run(shlex.split(local(commands[2])), cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=60)
        assert audit.returncode == 0, audit.stderr
        for line in shown[1].strip().splitlines():
            assert _matches(line, audit.stdout), (line, audit.stdout)
    assert b"SECRET" not in (tmp_path / "app.db").read_bytes()
