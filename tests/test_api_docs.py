"""docs/api.md's example runs as written and prints what the page says (issue 20 item 4);
the public names import lazily and are typed."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "api.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_api_example_runs_and_prints_what_the_page_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = blocks("python")[0]
    expected = blocks("text")[0]
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")  # "run from a checkout"
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, "<docs/api.md>", "exec"), {"__name__": "__docs__"})  # noqa: S102
    assert out.getvalue() == expected


def test_attempts_and_release_json_are_the_api_objects(tmp_path: Path) -> None:
    # The CLI reads through the same Store: its JSON is the objects' to_dict().
    from clihelp import run

    from tracestore import open_store

    db = tmp_path / "s.db"
    capture = REPO / "fixtures" / "real" / "anthropic" / "text-basic.sse"
    assert run("ingest", str(capture), "--attempt", "a1", db=db)[0] == 0
    code, listed, _ = run("attempts", "--json", db=db)
    code2, released, _ = run("release", "a1", "--json", db=db)
    with open_store(str(db)) as store:
        attempts = store.attempts()
        release = store.release("a1")
    assert (code, code2) == (0, 0)
    assert json.loads(listed) == {"attempts": [a.to_dict() for a in attempts]}
    assert json.loads(released) == json.loads(json.dumps(release.to_dict(), default=str))
    assert (attempts[0].attempt_id, release.status) == ("a1", "held")


def test_a_missing_store_and_unknown_names_are_typed_errors(tmp_path: Path) -> None:
    from tracestore import open_store
    from tracestore.errors import NotFound

    with pytest.raises(NotFound) as missing:
        open_store(str(tmp_path / "nowhere.db"))
    assert missing.value.code == "no_store"
    with open_store(str(tmp_path / "s.db"), create=True) as store:
        for call, code in ((lambda: store.release("x"), "attempt_not_found"),
                           (lambda: store.events(trace="t"), "trace_not_found"),
                           (lambda: store.audit("t"), "trace_not_found")):
            with pytest.raises(NotFound) as err:
                call()
            assert err.value.code == code


def test_import_tracestore_loads_nothing_heavy_and_the_package_is_typed() -> None:
    probe = ("import sys, tracestore; print(sorted(m for m in ('sqlalchemy', 'pydantic', "
             "'tracestore.api', 'tracestore.store') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"
    assert (REPO / "tracestore" / "py.typed").exists()
    assert '"tracestore" = ["py.typed"]' in (REPO / "pyproject.toml").read_text()
    import tracestore

    assert {"open_store", "Store", "Recorder", "AgentRunRecorder"} <= set(tracestore.__all__)
    assert tracestore.open_store.__module__ == "tracestore.api"
    with pytest.raises(AttributeError):
        tracestore.no_such_name  # noqa: B018
