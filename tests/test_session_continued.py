"""A realtime session continued over a second connection (Gemini's ``goAway`` then a new
connection resuming with its handle; an OpenAI client reconnecting): ``tracestore ingest
SECOND.jsonl --trace T`` onto a trace already holding the first connection's session appends
the second connection's turns to that trace, numbered on.  The turn the first connection's
end cut stays cut and is never released; it is not stitched to the second connection.
Tested on two halves of a real Gemini Live session from the shared corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clihelp import run
from tracestore.events import TransportDrained
from tracestore.projections.release import decide_release, trace_attempts
from tracestore.store.log import EventStore

from ws_upstream import WILD_WS

SESSION = WILD_WS / "gemini" / "pydantic-ai__test_google_ws__test_asap_enqueue_waits_for_response_boundary.jsonl"

pytestmark = pytest.mark.skipif(not SESSION.is_file(), reason="../shared/wild-ws is not here")


def _halves(tmp_path: Path) -> tuple[Path, Path, int]:
    """The session cut in the middle of its second turn: the first connection ends there
    (its server's close), the second carries the rest."""
    lines = [line for line in SESSION.read_text().splitlines() if line.strip()]
    ends = [i for i, line in enumerate(lines)
            if json.loads(line)["data"].get("serverContent", {}).get("turnComplete")]
    assert len(ends) >= 2
    cut = (ends[0] + ends[1]) // 2 + 1
    close = json.dumps({"dir": "server", "t": None, "kind": "close",
                        "data": {"code": 1011, "reason": "goAway", "ok": False}})
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("\n".join([*lines[:cut], close]) + "\n")
    second.write_text("\n".join(lines[cut:]) + "\n")
    return first, second, len(ends)


def test_second_connection_continues_the_trace(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first, second, _ = _halves(tmp_path)
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"answer_patterns": [""]}))
    code, _, err = run("ingest", str(first), "--trace", "T", "--task", str(task), db=db)
    assert code == 0, err
    with EventStore(f"sqlite:///{db}") as store:
        before = [a for a in trace_attempts(store.read()) if a.startswith("T-")]
    assert before == ["T-turn1", "T-turn2"]

    code, _, err = run("ingest", str(second), "--trace", "T", db=db)
    assert code == 0, err
    # Ingesting the same connection again appends nothing.
    code, _, err = run("ingest", str(second), "--trace", "T", db=db)
    assert code == 0, err
    with EventStore(f"sqlite:///{db}") as store:
        events = store.read()
    attempts = [a for a in trace_attempts(events) if a.startswith("T-")]
    assert attempts[:2] == before
    assert len(attempts) > 2
    assert attempts[2:] == [f"T-turn{n}" for n in range(3, len(attempts) + 1)]
    assert {e.trace_id for e in events if e.event.type == "attempt.started"} == {"T"}

    drains = {e.event.attempt_id: e.event.outcome for e in events
              if isinstance(e.event, TransportDrained)}
    assert drains["T-turn1"] == "clean"
    # The turn the first connection's end cut stays cut: never released, not stitched.
    assert drains["T-turn2"] == "error"
    assert decide_release(events, "T-turn2").status != "released"
    captures = {e.event.attempt_id: e.event.sha256 for e in events
                if e.event.type == "capture.stored"}
    assert captures["T-turn2"] == captures["T-turn1"] != captures["T-turn3"]
    # The second connection's messages are a turn of their own that ended cleanly; the cut
    # turn's text came before the cut, so nothing was stitched onto it: an empty answer.
    assert drains[attempts[-1]] == "clean"
    assert decide_release(events, attempts[-1]).reasons == ("empty_answer",)
