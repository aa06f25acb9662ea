"""``ingest-batch``: many files in one process, each exactly as ``ingest FILE`` records it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from clihelp import count_events, run

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
FILES = [REAL / "anthropic" / "text-basic.sse", REAL / "ollama" / "generate-granite-text.ndjson",
         REAL / "bedrock" / "nova-micro-text.bin"]


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "caps"
    folder.mkdir()
    for f in FILES:
        shutil.copy(f, folder / f.name)
    (folder / ".hidden").write_text("ignored")
    return folder


def test_a_folder_is_ingested_file_by_file_with_the_ids_ingest_gives(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    batch_db, single_db = tmp_path / "batch.db", tmp_path / "single.db"
    code, out, _ = run("ingest-batch", str(folder), "--json", db=batch_db)
    report = json.loads(out)
    assert (code, report["ingested"], report["failed"]) == (0, 3, 0)
    assert [Path(r["file"]).name for r in report["files"]] == sorted(f.name for f in FILES)
    for f in sorted(folder.iterdir()):
        if not f.name.startswith("."):
            assert run("ingest", str(f), "--json", db=single_db)[0] == 0
    ids = {}
    for db in (batch_db, single_db):
        code, out, _ = run("events", "--json", db=db)
        # Recorded decisions get fresh ids; every recorded input event keeps its own.
        ids[db] = [(e["id"] if e["type"] != "release.decided" else "fresh", e["stream"],
                    e["type"]) for e in map(json.loads, out.splitlines())]
    assert ids[batch_db] == ids[single_db] and len(ids[batch_db]) == count_events(batch_db)


def test_a_second_batch_is_a_no_op_and_a_bad_file_writes_nothing(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    db = tmp_path / "s.db"
    assert run("ingest-batch", str(folder), db=db)[0] == 0
    before = count_events(db)
    (folder / "zz-bad.json").write_bytes(b'[{"type":"response.created"}, 42]')
    code, out, _ = run("ingest-batch", str(folder), "--json", db=db)
    report = json.loads(out)
    assert code == 2 and count_events(db) == before
    assert [r.get("skipped", 0) > 0 and r.get("appended") == 0 for r in report["files"][:3]] \
        == [True, True, True]
    assert report["files"][3] == {"file": str(folder / "zz-bad.json"), "error": "invalid_shape",
                                  "message": "element 1 is a int, not an object"}
    assert (report["ingested"], report["failed"]) == (3, 1)


def test_a_missing_path_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, _, err = run("ingest-batch", str(tmp_path / "nope"), db=db)
    assert code == 2 and "file_not_found" in err and count_events(db) == 0
