"""``ingest FILE`` and ``ingest-batch FILE`` record the same thing (issue 20 item 1).

Both commands only read files and call ``tracestore.ingest.pipeline``.  Before, the batch
copied part of ``ingest`` "as ingest does" and had drifted: an agent-run file that
``ingest`` recorded as 17 events was refused by ``ingest-batch`` with ``invalid_json``.

For the fixtures of the repo, folder by folder, each file is ingested by ``ingest`` into one
store and the same files by one ``ingest-batch`` into another; the two logs must hold the
same events (position, id, stream, type, trace and payload: ids are deterministic, only the
recorded-at time differs) and every file must fail with the same code in both.  The real
commands run in-process (Typer's CliRunner); each store is opened once per folder (opening
and building the Typer command both cost ~100 ms a call; done once here).  The wild corpus has
~900 captures of a few shapes per folder: every eighth file of each wild folder is taken, so
the whole test stays within seconds.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from typer.main import get_command

from tracestore.cli import register
from tracestore.store.log import EventStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: One wild capture in this many (sorted by name) per folder; every other fixture is taken.
WILD_STRIDE = 8
#: The two commands' Click command, built once: Typer rebuilds the whole tree (~150 ms) on
#: every ``typer.testing.CliRunner.invoke(app)``, which was most of this test's time.
app = get_command(register(("store_cmds", "bulk_cmds")))


def fixture_folders() -> list[Any]:
    folders: dict[Path, list[Path]] = {}
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            folders.setdefault(path.parent, []).append(path)
    params = []
    for folder, files in sorted(folders.items()):
        name = folder.relative_to(FIXTURES).as_posix()
        if name.split("/")[0] == "wild":
            files = files[::WILD_STRIDE]
        params.append(pytest.param(files, id=name))
    return params


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """A RAM folder when the machine has one (each file is one committed transaction, and a
    commit's fsync on a shared disk was most of this test's time), with one migrated empty
    store that each case copies (migrating two stores per case was the rest)."""
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as name:
        EventStore(f"sqlite:///{Path(name) / 'empty.db'}").close()
        yield Path(name)


@pytest.fixture
def stores(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, EventStore]]:
    """Two SQLite stores, named by ``--db`` value; the commands get them already open."""
    for name in ("one", "batch"):
        shutil.copyfile(folder / "empty.db", folder / f"{name}.db")
    opened = {name: EventStore(f"sqlite:///{folder / name}.db") for name in ("one", "batch")}
    yield from _patched(opened, monkeypatch)


def _patched(opened: dict[str, EventStore],
             monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, EventStore]]:

    @contextmanager
    def open_store(db: str | None, **_: Any) -> Iterator[EventStore]:
        yield opened[db or ""]

    from tracestore.cli import bulk_cmds, store_cmds

    monkeypatch.setattr(store_cmds, "open_store", open_store)
    monkeypatch.setattr(bulk_cmds, "open_store", open_store)
    yield opened
    for store in opened.values():
        store.close()


def logged(store: EventStore) -> list[tuple[Any, ...]]:
    return [(e.position, e.id, e.stream, e.type, e.trace_id, e.event.model_dump(mode="json"))
            for e in store.read()]


def error_code(stderr: str) -> str:
    return json.loads(stderr.strip().splitlines()[-1])["error"]


@pytest.mark.parametrize("files", fixture_folders())
def test_ingest_batch_records_what_ingest_records(files: list[Path],
                                                  stores: dict[str, EventStore]) -> None:
    runner = CliRunner()
    one: list[tuple[str, str | None]] = []
    for path in files:
        result = runner.invoke(app, ["ingest", str(path), "--json", "--db", "one"])
        assert result.exit_code in (0, 2), (path, result.output)
        one.append((str(path), None if result.exit_code == 0 else error_code(result.stderr)))
    result = runner.invoke(app, ["ingest-batch", *map(str, files), "--json", "--db", "batch"])
    report = json.loads(result.stdout)
    batch = [(r["file"], r.get("error")) for r in report["files"]]
    assert batch == one
    assert result.exit_code == (2 if any(code for _, code in one) else 0)
    assert logged(stores["batch"]) == logged(stores["one"])


def test_the_agent_run_file_of_the_issue_is_recorded_by_both(
        stores: dict[str, EventStore]) -> None:
    # The report's case: 17 events and the run's decision, by both commands.
    path = FIXTURES / "agent" / "mutations" / "unissued-read.json"
    runner = CliRunner()
    alone = json.loads(runner.invoke(app, ["ingest", str(path), "--json", "--db", "one"]).stdout)
    result = runner.invoke(app, ["ingest-batch", str(path), "--json", "--db", "batch"])
    assert (alone["appended"], alone["decisions_recorded"]) == (17, [18])
    # (attempt_ids / run_count since issue 20 item 5; "attempts" and "runs" stay one release)
    assert (result.exit_code, json.loads(result.stdout)["files"]) == (0, [{
        "file": str(path), "attempt_ids": ["overwrite-agent-1--unissued-read"],
        "api": "agent-run", "kind": "agent-result", "run_count": 1, "appended": 17,
        "skipped": 0, "decisions_recorded": [18],
        "attempts": ["overwrite-agent-1--unissued-read"], "runs": 1}])
    assert len(logged(stores["batch"])) == 18 and logged(stores["batch"]) == logged(stores["one"])


def test_the_folders_hold_agent_runs_projections_and_captures() -> None:
    # Not vacuous: the kinds of input the pipeline tells apart are all among the cases.
    names = {p.id for p in fixture_folders()}
    assert {"agent/mutations", "projections", "real/anthropic", "wild/bedrock-converse"} <= names
