"""The one hostile fixture for every output (issue 26): model text holding every character
class the shared neutralizer (``tracestore.text.neutralize``) makes inert, ingested as a real
OpenAI Responses stream, plus helpers to check an output."""

from __future__ import annotations

import json
from pathlib import Path

from tracestore.text.neutralize import is_clean

#: NUL, ESC (an ANSI colour), BEL, backspace, lone CR, DEL, C1 CSI and NEL, bidi override,
#: isolate and mark, line/paragraph separators, and a lone surrogate.
RAW = ["\x00", "\x1b", "\x07", "\x08", "\r", "\x7f", "\x9b", "\x85", "\u202e", "\u2066",
       "\u200f", "\u2028", "\u2029", "\ud800"]
HOSTILE = ("Paris\x00 is \x1b[31mred\x1b[0m\x07\x08\r in \x7fFrance\x9b2J\x85 "
           "\u202eecnarF\u2066x\u200f\u2028y\u2029z\ud800 end")


def hostile_store(tmp_path: Path, *, attempt: str = "h") -> Path:
    """A SQLite store with one attempt whose released answer is ``HOSTILE``."""
    from clihelp import run

    body = [{"type": "response.output_text.delta", "sequence_number": 0, "item_id": "m",
             "output_index": 0, "content_index": 0, "delta": HOSTILE},
            {"type": "response.completed", "sequence_number": 9,
             "response": {"id": "r", "status": "completed"}},
            {"local": "drain", "outcome": "clean"}]
    src = tmp_path / "hostile.json"
    src.write_text(json.dumps(body), encoding="utf-8")  # escapes: the file is valid UTF-8
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"answer_patterns": ["Paris"]}), encoding="utf-8")
    db = tmp_path / "hostile.db"
    code, _, err = run("ingest", str(src), "--attempt", attempt, "--task", str(task), db=db)
    assert code == 0, err
    return db


def assert_inert(output: str, *, keep: str = "\n") -> None:
    """No raw character of ``RAW`` (nor any other the neutralizer names) in ``output``."""
    found = [c for c in RAW if c in output and c not in keep]
    assert found == [] and is_clean(output, keep=keep), found
