"""After a Stop against the mock, the mock's own log is the provider-side receipt: the test
attaches it as ``cancellation_receipt`` evidence (``tracestore evidence``) and records a
read-back of the app's history, and the attempt's review record fills Remote cancellation
and Actual destination readback from them (``tracestore review --json``), not UNKNOWN."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from chat_harness import Running

from tracestore.mock.pytest_plugin import assert_clean
from tracestore.recording.shutdown import flush_transports


def cli(*args: str) -> Any:
    done = subprocess.run([sys.executable, "-m", "tracestore", *args, "--json"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def field(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in record["fields"] if f["name"] == name)


def test_the_mock_log_is_the_receipt_of_a_stop(chat: Any, tracestore_recorder: Any,
                                               tmp_path: Path) -> None:
    app: Running = chat("stop.json")
    turn = app.ask()
    for kind, _ in app.events(turn):
        assert kind == "delta"
        break
    assert app.post(f"/stop/{turn}")["state"] == "stopped"
    receipt_fills_the_record(app, turn, tracestore_recorder, tmp_path)


def receipt_fills_the_record(app: Running, turn: str, tracestore_recorder: Any,
                             tmp_path: Path) -> None:
    """After a Stop of ``turn``: attach the mock's log entry as the cancellation receipt,
    read the app's history back, and check the review record fills Remote cancellation and
    Actual destination readback from them (the browser test calls this too)."""
    assert_clean(tracestore_recorder, turn)
    db = str(tracestore_recorder.store.url)
    attempt = app.app.turns[turn].attempts[0]
    record = cli("review", attempt.handle.attempt_id, "--template", "application-record",
                 "--db", db)
    assert field(record, "remote_cancellation")["value"] == "UNKNOWN"

    # The read-back: the app's history, as its page lists it, holds nothing for this turn.
    assert [h for h in app.http.get("/history").json() if h["turn"] == turn] == []
    attempt.handle.readback("history", "")
    # The receipt: the mock's log of the request, once it saw the client leave.
    app.wait(lambda: app.mock.log[0]["client_left_at"] is not None)
    entry = app.mock.log[0]
    receipt = tmp_path / "mock-log.json"
    receipt.write_text(json.dumps(entry, sort_keys=True))
    note = f"the mock saw the client leave at byte {entry['client_left_at']}"
    flush_transports()
    attached = cli("evidence", attempt.handle.attempt_id, "--kind", "cancellation_receipt",
                   "--file", str(receipt), "--note", note, "--db", db)

    record = cli("review", attempt.handle.attempt_id, "--template", "application-record",
                 "--db", db)
    (read,) = [e for e in tracestore_recorder.store.read(attempt_id=attempt.handle.attempt_id)
               if e.type == "destination.read_back"]
    (ui,) = [e for e in tracestore_recorder.store.read(attempt_id=attempt.handle.attempt_id)
             if e.type == "destination.written"]
    size, sha = receipt.stat().st_size, hashlib.sha256(receipt.read_bytes()).hexdigest()
    cancellation = field(record, "remote_cancellation")
    assert (cancellation["value"], cancellation["source"], cancellation["evidence"]) == (
        f"Receipt attached: cancellation_receipt mock-log.json ({size} bytes, sha256 "
        f"{sha[:16]}) at #{attached['position']}: {note}", "derived", [attached["position"]])
    actual = field(record, "actual_destinations")
    assert (actual["value"], actual["source"]) == (
        f"Actual: ui #{ui.position} — written by: application; "
        f"read back: history empty at #{read.position}; audit: no violations", "derived")
    assert read.position in actual["evidence"]
    assert "remote_cancellation" not in record["unknown"]
