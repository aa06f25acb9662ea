"""A store written with one global hash chain upgrades in place to per-trace chains.

The store is built at revision 0005 (the last with the global chain) with rows hashed by
that chain's recipe, then opened by this code: migration 0006 numbers each trace's rows,
keeps their hashes, records the split as an event, and every later append goes on its
trace's chain.  ``verify`` checks both; an export carries both.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PG_URL, _fresh_pg_url
from tracestore.events import SCHEMA_VERSIONS, FrameReceived, NewEvent, attempt_stream
from tracestore.store.append_types import canonical_payload
from tracestore.store.chain import GENESIS_HASH, chain_hash
from tracestore.store.log import EventStore

# (trace, frame text) in the order the old store stored them; None: the store's own chain
OLD_ROWS = [("a", "1"), ("b", "1"), ("a", "2"), (None, "s"), ("b", "2"), ("a", "3")]


def _old_store(url: str) -> list[str]:
    """A database at revision 0005 holding ``OLD_ROWS`` on the global chain; their hashes."""
    from alembic import command
    from sqlalchemy import create_engine, text

    from tracestore.store import migrate

    engine = create_engine(url)
    hashes, prev, versions = [], GENESIS_HASH, dict[str, int]()
    with engine.begin() as conn:
        config = migrate.alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "0005")
        for position, (trace, delta) in enumerate(OLD_ROWS, 1):
            stream = attempt_stream(trace or "own")
            versions[stream] = version = versions.get(stream, 0) + 1
            event = FrameReceived(attempt_id=trace or "own", api="openai-responses",
                                  native={"type": "response.output_text.delta", "delta": delta})
            payload = canonical_payload(event)
            at = f"2026-01-01T00:00:0{position}.000000+00:00"
            prev = chain_hash(prev, position, f"old-{position}", stream, version, event.type,
                              SCHEMA_VERSIONS[event.type], at, trace, payload)
            hashes.append(prev)
            conn.execute(text(
                "INSERT INTO ts_events (position, id, stream, version, type, schema_version, "
                "recorded_at, trace_id, payload, hash) VALUES (:p, :i, :s, :v, :t, 1, :r, "
                ":tr, :pl, :h)"), {"p": position, "i": f"old-{position}", "s": stream,
                                    "v": version, "t": event.type, "r": at, "tr": trace,
                                    "pl": payload.decode(), "h": prev})
    engine.dispose()
    return hashes


@pytest.fixture(params=["sqlite", "postgresql"])
def old_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgresql":
        if not PG_URL:
            pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
        yield _fresh_pg_url()
    else:
        yield f"sqlite:///{tmp_path / 'old.db'}"


def frame(trace: str, delta: str) -> NewEvent:
    return NewEvent(attempt_stream(trace), FrameReceived(
        attempt_id=trace, api="openai-responses",
        native={"type": "response.output_text.delta", "delta": delta}), trace_id=trace)


def test_an_old_store_upgrades_keeps_its_hashes_and_verifies(old_url: str) -> None:
    hashes = _old_store(old_url)
    with EventStore(old_url) as store:
        stored = store.read()
        assert [e.hash for e in stored[:6]] == hashes  # nothing re-hashed
        split = stored[6]
        assert (split.position, split.trace_id, split.event.type) == (7, None, "store.setting")
        assert (split.event.name, split.event.value) == ("chains", "per-trace")
        assert "rows 1..6 keep the global chain" in split.event.reason
        assert hashes[-1] in split.event.reason
        assert store.legacy_chain_end() == 6
        result = store.verify()
        assert (result.ok, result.count) == (True, 7)
        store.append([frame("a", "4"), frame("c", "1")])
        result = store.verify()
        assert (result.ok, result.count) == (True, 9)
        numbered = store.fetch_driver("SELECT trace_id, trace_version FROM ts_events "
                                      "ORDER BY position", (), during="the test")
        assert [tuple(row) for row in numbered] == [
            ("a", 1), ("b", 1), ("a", 2), (None, 1), ("b", 2), ("a", 3), (None, 2),
            ("a", 4), ("c", 1)]


def test_an_old_row_edited_after_the_upgrade_breaks_the_global_chain(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _old_store(url)
    EventStore(url).close()
    conn = sqlite3.connect(tmp_path / "old.db")
    conn.execute("DROP TRIGGER ts_events_no_update")
    conn.execute("UPDATE ts_events SET payload = replace(payload, '\"2\"', '\"X\"') "
                 "WHERE position = 3")
    conn.commit()
    conn.close()
    with EventStore(url) as store:
        result = store.verify()
    assert (result.ok, result.first_broken_position) == (False, 3)
    assert result.reason == "hash does not match the event's content and its predecessor"


def test_a_complete_export_of_an_upgraded_store_imports_with_the_same_hashes(
        old_url: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tracestore.cli import app

    _old_store(old_url)
    with EventStore(old_url) as store:
        store.append([frame("a", "4")])
        want = [(e.position, e.hash) for e in store.read()]
    runner = CliRunner()
    exported = runner.invoke(app, ["export", "--db", old_url, "--format", "jsonl"])
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    assert json.loads(lines[0])["legacy_chain_end"] == 6
    assert [json.loads(line)["event"]["trace_version"] for line in lines[1:]] == \
        [1, 1, 2, 1, 2, 3, 2, 4]
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    imported = runner.invoke(app, ["import", "-", "--db", copy, "--json"],
                             input=io.StringIO(exported.stdout).read())
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["same_hashes"] is True
    with EventStore(copy) as store:
        assert [(e.position, e.hash) for e in store.read()] == want
        assert store.legacy_chain_end() == 6
        assert store.verify().ok


@pytest.mark.parametrize("value", ['"6"', "-1", "true"])
def test_an_export_header_with_a_bad_chain_end_is_refused_and_imports_nothing(
        tmp_path: Path, value: str) -> None:
    from typer.testing import CliRunner

    from tracestore.cli import app

    source = f"sqlite:///{tmp_path / 'old.db'}"
    _old_store(source)
    EventStore(source).close()  # upgraded
    runner = CliRunner()
    exported = runner.invoke(app, ["export", "--db", source, "--format", "jsonl"]).stdout
    first, rest = exported.split("\n", 1)
    header = first.replace('"legacy_chain_end":6', f'"legacy_chain_end":{value}')
    assert header != first
    copy = tmp_path / "copy.db"
    imported = runner.invoke(app, ["import", "-", "--db", f"sqlite:///{copy}"],
                             input=header + "\n" + rest)
    assert imported.exit_code == 2
    assert "error[invalid_export]" in imported.stderr and "legacy_chain_end" in imported.stderr
    with EventStore(f"sqlite:///{copy}") as store:
        assert store.read() == []
