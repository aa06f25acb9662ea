"""The application's evidence from the command line: --retry-of, --stop-after-byte,
destination, task, decisions recorded by ingest, scenario steps over capture bytes."""

from __future__ import annotations

import json
from pathlib import Path

from tracestore.events import FrameReceived, LocalStopped
from tracestore.store.log import EventStore

from clihelp import count_events, run
from conftest import FIXTURES

REAL = FIXTURES / "real"
TEXT_BASIC = REAL / "anthropic" / "text-basic.sse"
GPT4O = REAL / "openai-responses" / "text-gpt-4o.sse"
PARIS = FIXTURES / "tasks" / "paris.json"


def events_of(db: Path, **filters: str) -> list:
    with EventStore(f"sqlite:///{db}") as store:
        return store.read(**filters)


def test_stop_after_byte_places_the_stop_between_the_frames_the_app_saw(db_file: Path) -> None:
    code, out, err = run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte",
                         "700", "--json", db=db_file)
    assert code == 0, err
    assert json.loads(out)["decisions_recorded"] == [13]
    body = [e.event for e in events_of(db_file, attempt_id="a")][2:]
    kinds = [(type(e).__name__, getattr(e, "offset", None), getattr(e, "length", None))
             for e in body]
    # Frames ending within the first 700 bytes (0+490, 490+132) come before the Stop; the
    # frame at 622 ends at 658 < 700 too; the next ends after 700.
    assert [k[0] for k in kinds] == (["FrameReceived"] * 3 + ["LocalStopped"]
                                     + ["FrameReceived"] * 4
                                     + ["TransportDrained", "ReleaseDecided"])
    assert all(o + n <= 700 for _, o, n in kinds[:3])
    assert kinds[4][1] + kinds[4][2] > 700
    code, out, _ = run("release", "a", "--json", db=db_file)
    assert (json.loads(out)["status"], json.loads(out)["reasons"]) == (
        "stopped", ["local_stop_before_release"])


def test_the_same_evidence_again_is_a_no_op_and_other_evidence_is_refused(db_file: Path) -> None:
    assert run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte", "700",
               db=db_file)[0] == 0
    before = count_events(db_file)
    code, out, _ = run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte", "700",
                       "--json", db=db_file)
    assert (code, json.loads(out)["appended"], json.loads(out)["decisions_recorded"]) == (
        0, 0, [])
    code, _, err = run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte", "900",
                       db=db_file)
    assert code == 2 and "attempt_exists" in err
    assert count_events(db_file) == before


def test_retry_of_links_the_retry_and_supersedes_nothing_already_final(db_file: Path) -> None:
    assert run("ingest", str(TEXT_BASIC), "--attempt", "old", "--trace", "q",
               "--task", str(PARIS), "--stop-after-byte", "700", db=db_file)[0] == 0
    code, out, err = run("ingest", str(GPT4O), "--attempt", "new", "--trace", "q",
                         "--retry-of", "old", "--json", db=db_file)
    assert code == 0, err
    started = [e.event for e in events_of(db_file, attempt_id="new")][0]
    assert started.retry_of == "old"
    code, out, _ = run("release", "new", "--json", db=db_file)
    assert json.loads(out)["status"] == "released"
    assert "Paris" in json.loads(out)["answer"]
    code, out, _ = run("release", "old", "--json", db=db_file)
    assert json.loads(out)["status"] == "stopped"


def test_retry_of_an_unknown_attempt_is_refused_and_writes_nothing(db_file: Path) -> None:
    code, _, err = run("ingest", str(GPT4O), "--attempt", "new", "--retry-of", "nope",
                       db=db_file)
    assert code == 4
    assert err.startswith("error[unknown_attempt]: --retry-of names 'nope'")
    assert count_events(db_file) == 0
