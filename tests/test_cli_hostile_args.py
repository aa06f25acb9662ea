"""Issue 26 items 7 (key file) and 11: unbounded and unchecked inputs outside ``import``.

``--key /dev/zero`` / ``--checkpoint /dev/zero`` grew until MemoryError; a non-UTF-8 id
argument, ``export --endpoint ''`` and ``--db sqlite://`` are refused at once with a code;
``--generate-key`` never writes through a planted symlink nor leaves half a key on a full
disk.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path

import pytest

from clihelp import count_events, run

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("args") / "s.db"
    assert run("ingest", str(CAPTURE), "--attempt", "nova", db=path)[0] == 0
    return path


def _error(result: tuple[int, str, str]) -> tuple[int, str]:
    return result[0], json.loads(result[2])["error"]


@pytest.mark.parametrize("args", [
    ["checkpoint", "--key", "/dev/zero"],
    ["verify", "--checkpoint", "/dev/zero", "--key", "/dev/zero"],
])
def test_endless_key_and_checkpoint_files_are_bounded(db: Path, args: list[str]) -> None:
    started = time.perf_counter()
    assert _error(run(*args, "--json", db=db)) == (2, "input_too_large")
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("args", [
    ["release", "\udcff\udcfe"], ["events", "--attempt", "a\udcff"],
    ["review", "x\udc80"],
])
def test_an_id_that_is_not_utf8_is_bad_input(db: Path, args: list[str]) -> None:
    # What Python makes of argv bytes b"\xff\xfe" (surrogateescape).
    assert _error(run(*args, "--json", db=db)) == (2, "invalid_argument")


@pytest.mark.parametrize("endpoint", ["", "not a url", "http://127.0.0.1:99999/v1/traces",
                                      "ftp://127.0.0.1/v1/traces", "http:///v1/traces"])
def test_a_bad_endpoint_is_refused_at_once(db: Path, endpoint: str) -> None:
    started = time.perf_counter()
    assert _error(run("export", "--format", "otlp", "--endpoint", endpoint, "--json",
                      db=db)) == (2, "invalid_endpoint")
    assert time.perf_counter() - started < 2


def test_an_in_memory_database_is_refused_by_the_cli() -> None:
    from clihelp import runner
    from tracestore.cli import app

    capture = str(CAPTURE)
    for args in (["ingest", capture, "--attempt", "a"], ["init"], ["events"]):
        result = runner.invoke(app, [*args, "--db", "sqlite://", "--json"])
        assert (result.exit_code, json.loads(result.stderr)["error"]) == (2, "memory_db_refused")


def test_generate_key_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", "utf-8")
    key = tmp_path / "k.pem"
    (tmp_path / "k.pem.pub").symlink_to(victim)
    assert _error(run("checkpoint", "--generate-key", str(key), "--json",
                      db=tmp_path / "x.db")) == (2, "key_exists")
    assert victim.read_text("utf-8") == "precious" and not key.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.pem.pub", "victim.txt"]


def test_generate_key_on_a_full_disk_leaves_no_key_file(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tracestore.errors import InputError
    from tracestore.store import checkpoint

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle) -> None:
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data: bytes) -> int:
            self.handle.write(data[: len(data) // 2])  # half the key reaches the disk
            self.handle.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises((OSError, InputError)):
        checkpoint.write_key_pair(tmp_path / "k.pem")
    assert list(tmp_path.iterdir()) == []


def test_a_key_pair_is_written_whole(tmp_path: Path) -> None:
    from tracestore.store import checkpoint

    public = checkpoint.write_key_pair(tmp_path / "k.pem")
    assert (tmp_path / "k.pem").stat().st_mode & 0o777 == 0o600
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.pem", "k.pem.pub"]
    assert count_events(tmp_path / "none.db") == 0
