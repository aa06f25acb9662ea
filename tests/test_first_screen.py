"""What a new user sees first: the main job at 80 columns, the command list, a mistyped
command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACESTORE_")}
    env.update(COLUMNS=str(columns), LINES="50", TERM="dumb", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "tracestore", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_main_job_fits_80_columns_with_whole_words(tmp_path: Path) -> None:
    replayed = _cli("replay", str(ROOT / "fixtures" / "seed003"), cwd=tmp_path)
    audited = _cli("audit", cwd=tmp_path)
    assert replayed.returncode == audited.returncode == 0, replayed.stderr + audited.stderr
    for out in (replayed.stdout, audited.stdout):
        lines = out.splitlines()
        assert max(map(len, lines)) <= 80
    # Answers are never folded inside a word: the answer column moved below the table.
    assert "answe" not in re.sub(r"\banswers?\b", "", replayed.stdout)
    assert "Wedne" not in replayed.stdout.replace("Wednesday", "")
    answers = replayed.stdout.split("\nanswers\n", 1)[1].splitlines()
    assert answers[0].startswith("s1: The public desk opens Wednesday from 09:00")
    # The closing lines say the violations are the seeded buggy applications' and expected.
    closing = " ".join(" ".join(replayed.stdout.splitlines()[-4:]).split())
    assert ("8 violations expected from the seeded buggy applications t1-eager-app (2), "
            "t7-leaky-app (3), t8-buggy-app (3): each writes to a destination what it must "
            "not, and catching that is their point.") in closing
    tail = " ".join(" ".join(audited.stdout.splitlines()[-2:]).split())
    assert ("8 violations in 3 of 23 traces: t1-eager-app (2), t7-leaky-app (3), "
            "t8-buggy-app (3)") in tail


def test_a_wide_terminal_keeps_the_answer_column(tmp_path: Path) -> None:
    replayed = _cli("replay", str(ROOT / "fixtures" / "seed003"), cwd=tmp_path, columns=160)
    assert replayed.returncode == 0
    assert "\nanswers\n" not in replayed.stdout
    header = next(line for line in replayed.stdout.splitlines() if "reasons (notes)" in line)
    assert "answer" in header


def test_an_unexpected_violation_count_is_called_out(tmp_path: Path) -> None:
    import json

    folder = tmp_path / "cases"
    folder.mkdir()
    for name in ("t1.json", "t8-buggy-app.json"):
        scenario = json.loads((ROOT / "fixtures" / "seed003" / name).read_text())
        if name.startswith("t8"):
            scenario["expected"]["violations"] = scenario["expected"]["violations"][:1]
        (folder / name).write_text(json.dumps(scenario))
    replayed = _cli("replay", str(folder), cwd=tmp_path)
    assert replayed.returncode == 0
    assert "t8-buggy-app: 3 violations, its scenario expects 1" in replayed.stdout
    assert "seeded buggy applications" not in replayed.stdout


def test_the_command_list_follows_the_reviewers_workflow(tmp_path: Path) -> None:
    from tracestore.cli import COMMAND_HOMES

    shown = _cli(cwd=tmp_path)
    text = shown.stdout + shown.stderr
    sections = re.findall(r"^([A-Z][A-Za-z ]+):$", text, flags=re.M)
    assert sections == ["Options", "Record", "Find", "Judge", "Review", "Export",
                        "Test your app", "The store"]
    listed = re.findall(r"^  ([a-z][a-z-]+)  ", text, flags=re.M)
    assert sorted(listed) == sorted(COMMAND_HOMES)
    record = text.split("\nRecord:\n", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^  ([a-z-]+)", record, flags=re.M)[:3] == [
        "ingest", "ingest-batch", "replay"]


def test_an_unknown_command_suggests_the_nearest(tmp_path: Path) -> None:
    for typed, meant in (("queue", "'attempts'"), ("desk", "'serve'"),
                         ("veriffy", "'verify'")):
        done = _cli(typed, cwd=tmp_path)
        assert done.returncode == 2
        assert f"Error: No such command '{typed}'. Did you mean {meant}" in done.stderr
    done = _cli("zzzz", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.rstrip().endswith("Error: No such command 'zzzz'.")
