"""Tables read well at 80 columns as at 200 (checked in a real process: the terminal width
is read when the program starts).  A store the table is read from is filled in-process
(``setup``): what is written does not depend on the width.

Codes and ids are whole tokens on one line, cut cells end with …, hashes are 16 hex digits
everywhere, and the buggy UI write of t8-buggy-app is drawn apart from the correct ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clihelp import run

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"
OPENAI = REPO / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"
CODES = ("local_stop_before_release", "superseded_after_decision", "frames_after_decision",
         "normal_native_ending", "clean_drain", "semantic_accepted", "answer_mismatch",
         "old_attempt_text_in_answer", "duplicate_history_entry")


def cli(db: Path, columns: int, *args: str) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TRACESTORE_DB": str(db)}
    done = subprocess.run([sys.executable, "-m", "tracestore", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def setup(db: Path, *args: str) -> None:
    """A command that only fills the store under test, run in-process (its output is not
    what the test reads)."""
    code, _, err = run(*args, db=db)
    assert code == 0, err


def row(out: str, position: int) -> str:
    """The timeline row of a position (a table line starting with it)."""
    return next(line for line in out.splitlines()
                if re.match(rf"│\s+{position} │", line))


@pytest.mark.parametrize("columns", [80, 200])
def test_buggy_app_replay_reads_at_any_width(tmp_path: Path, columns: int) -> None:
    db = tmp_path / "store.db"
    out = cli(db, columns, "replay", str(SEED / "t8-buggy-app.json"))
    assert all(len(line) <= columns for line in out.splitlines())
    tokens = set(re.findall(r"[a-z0-9_]+", out))
    for code in CODES:
        assert code in tokens, code  # whole, never split over two lines
    assert "t8b-old" in out and "t8b-new" in out
    # The buggy UI write (#20) and the second history entry (#22) are marked ✗; the
    # correct writes are arrows; all of them were recorded from the application.
    assert "✗ ui (app): The public" in row(out, 20)
    assert "✗ history (app): The" in row(out, 22)
    assert "→ history (app): The" in row(out, 21)
    assert "→ export (app): " in row(out, 23)
    # A cut cell ends with an ellipsis.
    assert re.search(r'text_delta "The public[^│]*…\s*│', row(out, 5))


@pytest.mark.parametrize("columns", [80, 200])
def test_audit_destinations_and_hashes(tmp_path: Path, columns: int) -> None:
    db = tmp_path / "store.db"
    setup(db, "replay", str(SEED / "t8-buggy-app.json"))
    out = cli(db, columns, "audit", "--trace", "t8-buggy-app")
    assert all(len(line) <= columns for line in out.splitlines())
    ui_text = ("The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed "
               "Thursday.It is closed Thursday.")
    ui_hash = hashlib.sha256(ui_text.encode()).hexdigest()
    ui_row = next(line for line in out.splitlines() if f" {ui_hash[:16]} " in line)
    assert re.search(r"│ t8b-new │ released │ ui\s+│\s+20 │", ui_row)
    assert ui_hash[:17] not in out  # one length: 16 hex digits
    code, verify, err = run("verify", db=db)  # the store the width run read is intact
    assert code == 0, err
    assert re.match(r"ok 25 events in \d+ traces? \(root [0-9a-f]{16}\)\n", verify)


def test_long_ids_stay_whole_at_80_columns(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    setup(db, "ingest", str(OPENAI))
    attempts = cli(db, 80, "attempts")
    assert attempts.count("text-gpt-4o-d03a397c") == 2
    events = cli(db, 80, "events", "--limit", "3")
    assert all(len(line) <= 80 for line in events.splitlines())
    assert "trace:text-gpt-4o-d03a397c" in events and "…" in events


def test_the_queue_keeps_api_status_and_review_state_whole_at_80(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    setup(db, "replay", str(SEED / "t7.json"))
    out = cli(db, 80, "attempts")
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "│ t7      │ t7    │ bedrock-converse-stream │ stopped    │" in out
    assert "│ unreviewed │" in out and "…" not in out


def test_decision_table_keeps_codes_whole_at_80(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    setup(db, "replay", str(SEED / "t8.json"))
    out = cli(db, 80, "release", "t8-old")
    table = out.split("└", 1)[0]
    assert "│ t8-old  │ stopped │  6 │ local_stop_before_release   │" in table
    assert "(superseded_after_decision)" in table
    code, out, err = run("release", "t8-old", "--json", db=db)  # JSON has no width
    assert code == 0, err
    json_out = json.loads(out)
    assert json_out["reasons"] == ["local_stop_before_release"]


def test_templates_listing_keeps_words_and_sentences_whole(tmp_path: Path) -> None:
    out = cli(tmp_path / "unused.db", 80, "templates")
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "API/endpoint/profile/source" in out  # one long word, never split
    assert "│ remote_cancellation " in out
    flat = " ".join(re.sub(r"[│┃]", " ", out).split())
    # The deriver's whole first paragraph, not its first source line.
    assert "UNKNOWN when neither the trace nor the bytes say anything about the source." in flat


OLD_ID = "application-question-0042-attempt-old-with-a-long-id"
NEW_ID = "application-question-0042-attempt-new-with-a-long-id"
TRACE_ID = "customer-support-question-0042-from-the-web-app"


@pytest.mark.parametrize("columns", [80, 200])
def test_task_and_destination_read_at_any_width(tmp_path: Path, columns: int) -> None:
    db = tmp_path / "store.db"
    real = REPO / "fixtures" / "real"
    setup(db, "ingest", str(real / "anthropic" / "text-basic.sse"), "--attempt", OLD_ID,
          "--trace", TRACE_ID, "--stop-after-byte", "700")
    setup(db, "ingest", str(OPENAI), "--attempt", NEW_ID, "--trace", TRACE_ID,
          "--retry-of", OLD_ID)
    task = cli(db, columns, "task", TRACE_ID, "--task",
               str(REPO / "fixtures" / "tasks" / "paris.json"))
    answer = tmp_path / "answer.txt"
    answer.write_text("The capital of France is Paris.", encoding="utf-8")
    shown = cli(db, columns, "destination", NEW_ID, "history", "--text-file", str(answer),
                "--readback")
    for out in (task, shown):
        assert all(len(line) <= columns for line in out.splitlines()), out
    # Every word whole (ids, codes, "sha256 <hash>", "position N"), in the order written.
    assert " ".join(task.split()) == (
        f"trace {TRACE_ID}: task rule version 2 at position 33; 2 decisions recorded under "
        f"it {OLD_ID}: stopped (local_stop_before_release) {NEW_ID}: released "
        "(normal_native_ending, clean_drain, semantic_accepted)")
    digest = hashlib.sha256(answer.read_bytes()).hexdigest()[:16]
    assert " ".join(shown.split()) == (
        f"recorded: 31 characters read back from history for attempt {NEW_ID} "
        f"(sha256 {digest}) at position 37")
    assert f"(sha256 {digest})" in shown and "position 37" in shown
    if columns == 80:  # a reason list continues under its attempt, indented deeper
        assert task.splitlines()[2:4] == [f"  {OLD_ID}: stopped",
                                          "      (local_stop_before_release)"]
    else:
        assert len(task.splitlines()) == 3 and len(shown.splitlines()) == 1
