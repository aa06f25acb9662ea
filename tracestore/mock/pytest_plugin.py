"""tracestore's pytest plugin (installed with the package, entry point ``pytest11``).

Fixtures:

* ``tracestore_mock`` -- ``mock = tracestore_mock("scenario.json")`` starts a mock provider
  on a free port of 127.0.0.1 for the test (``mock.url``, ``mock.log``); stopped after it;
* ``tracestore_recorder`` -- a ``Recorder`` on a new SQLite store in the test's temporary
  folder (``tracestore_recorder.store``), closed after the test;
* ``tracestore_conformance_case`` -- a test that takes it runs once per case of the
  conformance pack (``tracestore.mock.conformance.cases()``, ids the case names): run the
  app against ``case.scenario`` as ``case.user`` says, then ``case.check(recorder, trace)``.

``assert_clean(recorder_or_store, trace=None)`` fails a test with the audit's violation
table when any destination holds what the release policy forbids.  Nothing here is
imported until a test asks for it, so the plugin costs pytest's start-up nothing.

In a test run the recording transports' default writer is the thread
(``TRACESTORE_WRITER=thread`` unless the variable is set): the process writer's child,
one per transport, would outlive each test that does not close its client.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_WRITER_SET: list[bool] = []


def pytest_configure(config: pytest.Config) -> None:
    if "TRACESTORE_WRITER" not in os.environ:
        os.environ["TRACESTORE_WRITER"] = "thread"
        _WRITER_SET.append(True)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _WRITER_SET:
        os.environ.pop("TRACESTORE_WRITER", None)
        _WRITER_SET.clear()


@pytest.fixture
def tracestore_mock() -> Iterator[Callable[[Path | str], Any]]:
    from tracestore.mock import RunningMock

    started: list[RunningMock] = []

    def start(scenario: Path | str) -> RunningMock:
        mock = RunningMock(scenario)
        mock.__enter__()
        started.append(mock)
        return mock

    yield start
    for mock in reversed(started):
        mock.__exit__(None, None, None)


@pytest.fixture
def tracestore_recorder(tmp_path: Path) -> Iterator[Any]:
    from tracestore import Recorder

    with Recorder(f"sqlite:///{tmp_path / 'tracestore.db'}") as recorder:
        yield recorder


CONFORMANCE_FIXTURE = "tracestore_conformance_case"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if CONFORMANCE_FIXTURE not in metafunc.fixturenames:
        return  # the pack is read only for a test that asks for it
    from tracestore.mock.conformance import cases

    pack = cases()
    metafunc.parametrize(CONFORMANCE_FIXTURE, pack, ids=[c.name for c in pack])


def assert_clean(source: Any, trace: str | None = None) -> None:
    """Fail with the audit's violations (code, attempt, destination, position, what),
    once every recording transport has recorded what its application received."""
    from tracestore.api import Store
    from tracestore.recording.shutdown import flush_transports

    flush_transports()
    store = getattr(source, "store", source)
    report = Store(store).audit(trace)
    if report.violations:
        lines = [f"  #{v.position} {v.code} ({v.attempt_id}, {v.destination}): {v.message}"
                 for v in report.violations]
        raise AssertionError(f"{len(lines)} violation(s)"
                             + (f" in trace {trace}" if trace else "") + ":\n"
                             + "\n".join(lines))


__all__ = ["CONFORMANCE_FIXTURE", "assert_clean", "pytest_configure", "pytest_generate_tests",
           "pytest_unconfigure", "tracestore_mock", "tracestore_recorder"]
