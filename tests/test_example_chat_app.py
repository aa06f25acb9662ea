"""examples/chat-app's own suite passes: a real app (Starlette, the openai SDK) driven
against ``tracestore mock``, judged by the audit through the pytest plugin.  It runs as its
users run it, ``python -m pytest`` inside the example, with this checkout's tracestore."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# ~25 s: the example's own suite in a subprocess; .ci/run runs it with ``-m slow``
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "chat-app"


def test_the_chat_app_example_suite_passes() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(EXAMPLE), str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs"],
                          cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
