"""The PostgreSQL append line (``store.pg_append``): rows sent as literals read back as
given, and every case the line cannot take goes the engine's way with nothing lost."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import PG_URL, _fresh_pg_url
from tracestore.events import FrameReceived, SerializedEvent, attempt_stream
from tracestore.recording.rows import fresh_ids
from tracestore.store.append_types import canonical_payload
from tracestore.store.log import EventStore
from tracestore.store.pg_append import pg_literal_array, row_literal

pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server "
                                "(set TRACESTORE_TEST_PG_URL)")

AWKWARD = ["t", "it's", "back\\slash", "\\'", 'quo"te', "{br,ace}", "ünï cødé ✓", "NULL",
           "", "\\x41", "E'x'", "%s %(x)s", "tab\tnew\nline", "😀"]


@pytest.fixture
def store() -> Iterator[EventStore]:
    with EventStore(_fresh_pg_url()) as opened:
        yield opened


def rows(trace: str, deltas: list[str]) -> list[SerializedEvent]:
    stream = attempt_stream(trace)
    return [SerializedEvent(stream, event_id, trace, "frame.received", canonical_payload(
        FrameReceived(attempt_id=trace, api="openai-responses",
                      native={"type": "response.output_text.delta", "delta": delta})))
            for delta, event_id in zip(deltas, fresh_ids(len(deltas)))]


def line_only(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if an append leaves the line for the engine's pool (a refused row is
    tried again there, which would hide a wrong line)."""
    def no_engine() -> None:
        raise AssertionError("an append left the line for the engine's pool")

    monkeypatch.setattr(store, "_write_transaction", no_engine)


def line_pid(store: EventStore) -> int:
    assert store._line is not None and store._line._driver_conn is not None
    return int(store._line._driver_conn.info.backend_pid)


@pytest.mark.parametrize("standard_strings", ["on", "off"])
def test_literals_read_back_every_value_as_given(store: EventStore,
                                                  standard_strings: str) -> None:
    from tracestore.store.pg_bulk import pg_result_sets

    with store._writer.begin() as conn:  # sent as the line sends: one simple query
        _, got, (row,) = pg_result_sets(
            conn, f"SET LOCAL standard_conforming_strings = {standard_strings}; "
            f"SELECT unnest({pg_literal_array(AWKWARD)}); "
            f"SELECT * FROM (VALUES {row_literal([7, None, *AWKWARD])}) AS v")
        assert [value for (value,) in got] == AWKWARD
        assert list(row) == [7, None, *AWKWARD]


def test_versions_and_heads_past_nine_are_read_as_numbers(
        store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each append asks the stream's version and the trace's head afresh (nothing
    remembered): the eleventh must follow the tenth, not the ninth ("10" < "9" as text),
    and on the line -- a refused row would be tried again through the engine's pool."""
    line_only(store, monkeypatch)
    for delta in map(str, range(12)):
        (result,) = store.append_fresh_groups([("g", rows("a", [delta]), None, [])], {})
        assert result.trace_spans == (("a", int(delta), int(delta) + 1),)
    stored = store.read(trace_id="a")
    assert [(e.version, e.event.native["delta"]) for e in stored] == [
        (n + 1, str(n)) for n in range(12)]
    assert store.verify().ok


def test_awkward_text_and_every_byte_are_stored_as_sent(
        store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = bytes(range(256)) * 3
    line_only(store, monkeypatch)
    (result,) = store.append_fresh_groups([("g", rows("tr'\\", AWKWARD), None, [blob])])
    monkeypatch.undo()
    stored = store.read(trace_id="tr'\\")
    assert [e.event.native["delta"] for e in stored] == AWKWARD
    assert store.get_blob(result.blobs_stored[0]) == blob
    assert store.verify().ok


def test_a_database_reading_backslashes_as_escapes_stores_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``standard_conforming_strings = off`` for the whole database: the line's text and
    blob literals still read back as sent."""
    import psycopg

    url = _fresh_pg_url()
    libpq = url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(libpq, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {url.rsplit('/', 1)[1]} "
                      "SET standard_conforming_strings = off")
    blob = b"\\x41\\'" + bytes(range(256))
    with EventStore(url) as store:
        store.append_fresh_groups([("g", rows("w", ["warm"]), None, [])])
        assert store._line is not None and store._line._driver_conn is not None
        setting = store._line._driver_conn.execute("SHOW standard_conforming_strings")
        assert setting.fetchone() == ("off",)
        line_only(store, monkeypatch)
        (result,) = store.append_fresh_groups([("g", rows("t\\", AWKWARD), None, [blob])])
        monkeypatch.undo()
        assert [e.event.native["delta"] for e in store.read(trace_id="t\\")] == AWKWARD
        assert store.get_blob(result.blobs_stored[0]) == blob
        assert store.verify().ok


def test_an_append_while_another_thread_holds_the_line_takes_the_engine_path(
        store: EventStore) -> None:
    store.append_fresh_groups([("g", rows("a", ["x"]), None, [])])
    line = store._line
    assert line is not None
    with line.taken() as held:
        assert held is not None
        with line.taken() as other:
            assert other is None  # a second taker is turned away, never made to wait
        (result,) = store.append_fresh_groups([("g", rows("b", ["y"]), None, [])])
    assert len(result.positions) == 1
    assert [e.trace_id for e in store.read()] == ["a", "b"]
    assert store.verify().ok


def test_a_line_connection_the_server_ended_is_replaced_and_nothing_is_lost(
        store: EventStore) -> None:
    import psycopg

    store.append_fresh_groups([("g", rows("a", ["x"]), None, [])])
    before = line_pid(store)
    libpq = store.url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(libpq, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (before,))
    (result,) = store.append_fresh_groups([("g", rows("a", ["y"]), None, [])])
    assert len(result.positions) == 1  # sent on the engine's pool instead
    store.append_fresh_groups([("g", rows("a", ["z"]), None, [])])
    assert line_pid(store) != before  # and the line connected anew
    assert [e.event.native["delta"] for e in store.read(trace_id="a")] == ["x", "y", "z"]
    assert store.verify().ok


def test_an_idle_line_is_kept_without_a_ping(store: EventStore,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """However long the line sat idle (the pool's idle limit set to 0 here), the next
    append goes on the same connection: the line neither pings nor replaces it."""
    from tracestore.store import engine as engines

    store.append_fresh_groups([("g", rows("a", ["x"]), None, [])])
    before = line_pid(store)
    monkeypatch.setattr(engines, "POOL_PING_IDLE_S", 0.0)
    line_only(store, monkeypatch)
    store.append_fresh_groups([("g", rows("a", ["y"]), None, [])])
    assert line_pid(store) == before
    assert [e.event.native["delta"] for e in store.read(trace_id="a")] == ["x", "y"]


def test_a_refused_row_rolls_the_line_back_and_the_batch_is_tried_again(
        store: EventStore) -> None:
    """A stream version the caller remembers wrongly is refused by the unique constraint
    on the line; nothing of that try stays, and the engine path writes the batch."""
    store.append_fresh_groups([("g", rows("a", ["x", "y"]), None, [])])
    stale = {attempt_stream("a"): 1}  # the stream is at 2
    (result,) = store.append_fresh_groups([("g", rows("a", ["z"]), None, [])], stale)
    assert len(result.positions) == 1 and stale == {attempt_stream("a"): 3}
    assert [(e.version, e.event.native["delta"]) for e in store.read(trace_id="a")] == [
        (1, "x"), (2, "y"), (3, "z")]
    assert store.verify().ok


def test_a_stale_expectation_is_a_typed_conflict_and_writes_nothing(store: EventStore) -> None:
    from tracestore.errors import ExpectedVersionConflict

    store.append_fresh_groups([("g", rows("a", ["x"]), {attempt_stream("a"): 0}, [])])
    (outcome,) = store.append_fresh_groups([("g", rows("a", ["y"]),
                                             {attempt_stream("a"): 0}, [])])
    assert isinstance(outcome, ExpectedVersionConflict)
    assert outcome.context == {"stream": attempt_stream("a"), "expected": 0, "actual": 1}
    assert len(store.read()) == 1
    assert store.verify().ok


def test_a_line_made_before_a_fork_is_left_to_the_parent(store: EventStore) -> None:
    store.append_fresh_groups([("g", rows("a", ["x"]), None, [])])
    parent = line_pid(store)
    pid = os.fork()
    if pid == 0:  # the child appends on a line of its own, and leaves the parent's alone
        code = 1
        try:
            store.append_fresh_groups([("g", rows("c", ["child"]), None, [])])
            code = 0 if line_pid(store) != parent else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.append_fresh_groups([("g", rows("a", ["y"]), None, [])])  # the parent's line works
    assert line_pid(store) == parent
    assert sorted(e.trace_id or "" for e in store.read()) == ["a", "a", "c"]
    assert store.verify().ok


def test_text_holding_nul_is_refused_as_the_engine_refuses_it(store: EventStore) -> None:
    from tracestore.errors import StoreError

    bad: Any = rows("a", ["x"])
    bad[0] = SerializedEvent(bad[0].stream, bad[0].id, bad[0].trace_id, bad[0].type,
                             b'{"x":"\x00"}')
    with pytest.raises(StoreError) as caught:
        store.append_fresh_groups([("g", bad, None, [])])
    assert caught.value.code == "database_unavailable"
    assert store.read() == []
