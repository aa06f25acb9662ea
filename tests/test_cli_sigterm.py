"""SIGTERM stops a long command as Ctrl-C does: its one transaction rolls back, so the store
holds all of the input or none of it, and ``verify`` passes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tracestore.store.log import EventStore

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def _large_capture(path: Path, deltas: int) -> None:
    """text-usage-moderation-gpt-5.sse (fixtures/real/PROVENANCE.md) with its first text
    delta repeated: a long, valid Chat Completions stream."""
    lines = (REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse").read_bytes().split(
        b"\n\n")
    delta = next(e for e in lines if b'"content":"' in e and b'"content":""' not in e)
    at = lines.index(delta)
    path.write_bytes(b"\n\n".join([*lines[:at], *[delta] * deltas, *lines[at:]]))


def test_sigterm_mid_ingest_leaves_all_or_nothing(tmp_path: Path) -> None:
    capture = tmp_path / "long.sse"
    _large_capture(capture, 150_000)
    db = tmp_path / "t.db"
    proc = subprocess.Popen([sys.executable, "-m", "tracestore", "ingest", str(capture),
                             "--attempt", "long", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # inside the work (a 150,000-frame ingest takes seconds)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert "internal error" not in err and "Traceback" not in err
    assert proc.returncode in (0, 130), err  # finished first, or stopped as by Ctrl-C
    frames = 0
    if db.exists():
        with EventStore(f"sqlite:///{db}") as store:
            assert store.verify().ok
            frames = sum(e.type == "frame.received" for e in store.read(attempt_id="long"))
    if proc.returncode == 130:
        assert frames == 0  # the ingest's one transaction rolled back
    else:
        assert frames > 150_000
