"""Every file a command reads is read through a bounded reader: an endless device
(``/dev/zero``) given to any file argument or option ends in ``input_too_large``.

No absolute times: the bound is asserted as the memory traced while the command runs
(``tracemalloc``), a small multiple of the reader's limit, after one warm-up run has loaded
the modules the command imports.  An alarm turns a reader without a bound into a failure
instead of a hang.
"""

from __future__ import annotations

import json
import os
import signal
import tracemalloc
from pathlib import Path

import pytest

from clihelp import runner
from tracestore.cli import app, store_cmds
from tracestore.export import import_checks
from tracestore.store.checkpoint import MAX_SMALL_FILE

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")

ZERO = "/dev/zero"
REPO = Path(__file__).resolve().parents[1]
CAPTURE = str(REPO / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin")
CONTRACT = str(REPO / "fixtures" / "contracts" / "seed004-faq.json")
CASES = str(REPO / "fixtures" / "contracts" / "seed004-failures.jsonl")
LIMIT = 1 << 20  # the input bound while these tests run

#: Every command option or argument naming a file the command reads.
COMMANDS: dict[str, list[str]] = {
    "evidence --file": ["evidence", "e1", "--kind", "cancellation_receipt", "--file", ZERO],
    "ingest FILE": ["ingest", ZERO],
    "ingest --task": ["ingest", CAPTURE, "--task", ZERO],
    "ingest --contract": ["ingest", CAPTURE, "--contract", ZERO],
    "ingest --binding": ["ingest", CAPTURE, "--binding", ZERO],
    "ingest-batch FILE": ["ingest-batch", ZERO],
    "replay FILE": ["replay", ZERO],
    "import FILE": ["import", ZERO],
    "grade --cases": ["grade", "--cases", ZERO],
    "contract check FILE": ["contract", "check", ZERO, "--contract", CONTRACT],
    "contract check --contract": ["contract", "check", CASES, "--contract", ZERO],
    "contract check --binding": ["contract", "check", CASES, "--contract", CONTRACT,
                                 "--binding", ZERO],
    "destination --text-file": ["destination", "e1", "ui", "--text-file", ZERO],
    "task --task": ["task", "t1", "--task", ZERO],
    "proxy --task": ["proxy", "--upstream", "https://example.invalid", "--task", ZERO],
    "reviewer add --public-key": ["reviewer", "add", "ann", "--public-key", ZERO],
    "review --key": ["review", "e1", "--set", "summary=x", "--reviewer", "ann",
                     "--key", ZERO],
    "review-batch --key": ["review-batch", "--status", "passed", "--approve",
                           "--reviewer", "ann", "--key", ZERO],
    "judge --key": ["judge", "e1", "accept", "--key", ZERO],
    "serve --key": ["serve", "--key", ZERO],
    "verify --checkpoint": ["verify", "--checkpoint", ZERO],
    "checkpoint --key": ["checkpoint", "--key", ZERO],
}
#: What ``--json`` cannot be given to (they print no result of their own).
NO_JSON = {"proxy --task", "serve --key", "review --key"}
#: What reads no store.
NO_DB = {"contract check FILE", "contract check --contract", "contract check --binding"}
#: Run with -m slow only: the default run keeps one file argument or option of each kind of
#: reader and of each way a refusal is reported (the batch's report, --json, plain stderr,
#: no store, the small-file limit); each case is a traced run of its own.
SLOW = {"evidence --file", "ingest --contract", "ingest --binding", "grade --cases",
        "contract check --contract", "contract check --binding", "destination --text-file",
        "task --task", "reviewer add --public-key", "review-batch --key", "judge --key",
        "serve --key", "checkpoint --key"}


def _run(args: list[str], db: Path | None, json_flag: bool):
    def endless(signum, frame):  # noqa: ARG001 - a signal handler's signature
        raise AssertionError(f"{args} is still reading after 30 s: its reader has no bound")

    previous = signal.signal(signal.SIGALRM, endless)
    signal.alarm(30)
    try:
        return runner.invoke(app, [*args, *(["--json"] if json_flag else []),
                                   *(["--db", str(db)] if db is not None else [])])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(store_cmds, "MAX_INPUT_BYTES", LIMIT)
    monkeypatch.setattr(import_checks, "MAX_LINE_CHARS", LIMIT)
    db = tmp_path / "s.db"
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    return db


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW
                                  else name for name in COMMANDS])
def test_an_endless_file_is_refused_at_the_bound(store: Path, name: str) -> None:
    args, json_flag = COMMANDS[name], name not in NO_JSON
    db = None if name in NO_DB else store
    _run(args, db, json_flag)  # warm-up: the command's modules are imported now
    tracemalloc.start()
    try:
        result = _run(args, db, json_flag)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 2, (result.exit_code, result.stderr[-400:],
                                   repr(result.exception))
    if name == "ingest-batch FILE":  # one report per file, the batch goes on
        [error] = json.loads(result.stdout)["files"]
        assert error["error"] == "input_too_large", error
    elif json_flag:
        error = json.loads(result.stderr.strip().splitlines()[-1])
        assert error["error"] == "input_too_large", error
        assert error["limit"] in (LIMIT, MAX_SMALL_FILE), error
    else:
        assert "input_too_large" in result.stderr or "larger than" in result.stderr, \
            result.stderr
    # The bytes read (at most the limit), a copy or two of them, the command's own objects.
    assert peak < 4 * LIMIT + (8 << 20), peak
