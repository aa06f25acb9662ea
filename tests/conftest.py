"""Shared fixtures.

``store`` runs each store contract test against every backend: a SQLite file, SQLite in
memory, and PostgreSQL when ``TRACESTORE_TEST_PG_URL`` names a server (``.ci/run`` starts
one when the machine has PostgreSQL; elsewhere those cases are skipped, visibly) -- plain,
and (marked slow) with its tables hash-partitioned by trace.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracestore.store.log import EventStore

# The suite records with the writer thread unless a test asks for the process writer
# (``writer="process"``, or ``writer="auto"`` with this variable set otherwise): one child
# process per recording transport would outlive each test.  ``TRACESTORE_WRITER=auto pytest
# tests/test_recording_sdk.py`` runs a file under the default instead.
os.environ.setdefault("TRACESTORE_WRITER", "thread")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
PG_URL = os.environ.get("TRACESTORE_TEST_PG_URL")


def _fresh_pg_url() -> str:
    """A new empty database on the test server, so every test starts from nothing."""
    from sqlalchemy import create_engine, text

    assert PG_URL is not None
    name = f"ts_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return PG_URL.rsplit("/", 1)[0] + "/" + name


def _partitioned_pg_url() -> str:
    """A new database holding a migrated store whose tables are hash-partitioned into 8
    (``tracestore store partition``): the stand-in for a store distributed by trace."""
    from tracestore.store.partition import partition_store

    url = _fresh_pg_url()
    partition_store(url, 8)
    return url


# ``postgresql-partitioned`` runs every store contract test once more on partitioned
# tables; it is slow (a database, a migration and a rebuild per test), so ``-m slow`` runs it.
@pytest.fixture(params=["sqlite-file", "sqlite-memory", "postgresql",
                        pytest.param("postgresql-partitioned", marks=pytest.mark.slow)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite-file":
        return f"sqlite:///{tmp_path / 'store.db'}"
    if request.param == "sqlite-memory":
        return "sqlite://"
    if not PG_URL:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    if request.param == "postgresql-partitioned":
        return _partitioned_pg_url()
    return _fresh_pg_url()


@pytest.fixture
def store(store_url: str) -> Iterator[EventStore]:
    with EventStore(store_url) as opened:
        yield opened


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def load_tool(name: str):  # noqa: ANN201 - a module loaded from its path
    """``tools/NAME.py`` (the docs' generators: real_decisions, wild_decisions) as a module;
    tools/ is not a package, so each test loads it from its path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def planned_real(capture: str) -> list:
    """A real capture (path under fixtures/real) planned as ``ingest`` plans it, with a rule
    that accepts any text, as stored events at positions 1, 2, … (no store needed)."""
    import datetime as dt

    from tracestore.events import StoredEvent, TaskRule
    from tracestore.ingest import plan_ingest

    path = FIXTURES / "real" / capture
    plan = plan_ingest(path.read_bytes(), filename=path.name, attempt_id="a",
                       task=TaskRule(answer_patterns=("",)))
    stamp = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1, stamp, n.trace_id, n.event, "")
            for i, n in enumerate(plan.events)]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Full collections that skip what the collection imported, as ``tracestore``'s own
    ``main()`` freezes its start-up heap.

    Collecting imports every test module and, through them, the package, SQLAlchemy,
    pydantic and most SDKs: objects that live as long as the run.  Each automatic full
    collection walked them all again (~0.1-0.25 s each, some 200 of them, ~20 s of a
    default run).  ``gc.freeze()`` moves what is alive now into a generation the collector
    skips; everything a test makes from here on is collected as before.
    """
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture(scope="module")
def frozen_heap() -> Iterator[None]:
    """Full collections that skip what the module found alive.

    The recording tests end each case with ``gc.collect()`` (a stream the application left
    early sits in a reference cycle; it must be finalized while every module is whole).
    With the SDKs imported (botocore's service models alone are millions of objects) each
    full collection took ~0.25 s, a minute over the recording matrix.  ``gc.freeze()``
    moves every object alive now into a generation the collector skips, so a case's
    collection walks only what the case made.  They stay frozen after the module (as the
    heap frozen after the collection does): ``gc.unfreeze()`` would hand that back too.
    """
    import gc

    import anthropic  # noqa: F401 - imported before the freeze, as the tests will
    import boto3  # noqa: F401
    import google.genai  # noqa: F401
    import openai  # noqa: F401

    gc.collect()
    gc.freeze()
    yield
