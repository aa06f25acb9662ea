"""A kill -9 campaign over every writer -- ingest, ingest-batch, replay FOLDER and
the live recorder -- at random points.

    python bench/kill_campaign.py [KILLS] [--seed N] [--json]        (default 100 kills)

Each round picks a writer, starts it as its own process on that writer's SQLite store (the
stores accumulate over the rounds), and SIGKILLs it after a random delay within the time a
clean run takes.  Then:

* ``verify`` must pass (``verify failures``);
* for the file writers, attempts that hold frames but no ``release.decided`` right after
  the kill are counted (``undecided after kill``: the window between two transactions),
  then the same command is run again to completion, as an operator would, and every attempt
  must have its decision (``missing decisions after re-run``) and exactly the frames of a
  clean run (``partial attempts``);
* for the live recorder, the attempt in flight must be pending with a well-formed prefix
  and every earlier attempt complete (the checks of bench/kill_recorder.py).

Exit status 1 when any of verify failures, missing decisions after re-run or partial
attempts is not 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "fixtures" / "real"
BATCH = ["anthropic/text-basic.sse", "openai-responses/text-gpt-4o.sse",
         "bedrock/nova-micro-text.bin", "openai-chat/tool-call-include-usage-gpt-4o-mini.sse"]
MODES = ("ingest", "ingest-batch", "replay", "recorder")


def _long_capture(path: Path, deltas: int) -> None:
    """An Anthropic stream of ``deltas`` small text deltas (one frame each)."""
    head = ('event: message_start\ndata: {"type":"message_start","message":{"model":"m",'
            '"id":"m","type":"message","role":"assistant","content":[],"usage":'
            '{"input_tokens":1,"output_tokens":1}}}\n\nevent: content_block_start\ndata: '
            '{"type":"content_block_start","index":0,"content_block":{"type":"text",'
            '"text":""}}\n\n')
    delta = ('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
             '"delta":{"type":"text_delta","text":"paris is in france. "}}\n\n')
    tail = ('event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
            'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
            '"end_turn"},"usage":{"output_tokens":5}}\n\nevent: message_stop\ndata: '
            '{"type":"message_stop"}\n\n')
    path.write_text(head + delta * deltas + tail, encoding="utf-8")


def _key(mode: str, attempt: str) -> str:
    """Which clean-run attempt an attempt repeats (ingest rounds name theirs big-N)."""
    return f"{mode}:big" if mode == "ingest" else f"{mode}:{attempt}"


class Campaign:
    def __init__(self, work: Path, deltas: int) -> None:
        self.work = work
        self.big = work / "big.sse"
        _long_capture(self.big, deltas)
        self.task = work / "task.json"
        self.task.write_text('{"answer_patterns": ["paris"]}', encoding="utf-8")
        self.batch = work / "batch"
        self.batch.mkdir()
        for name in BATCH:
            shutil.copy(REAL / name, self.batch / name.replace("/", "--"))
        self.dbs = {mode: work / f"{mode}.db" for mode in MODES}
        self.rounds: Counter[str] = Counter()
        self.expected_frames: dict[str, int] = {}
        spec = importlib.util.spec_from_file_location("kill_recorder",
                                                      REPO / "bench" / "kill_recorder.py")
        assert spec is not None and spec.loader is not None
        self.recorder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.recorder)

    def command(self, mode: str, n: int) -> list[str]:
        py = [sys.executable, "-m", "tracestore"]
        db = ["--db", str(self.dbs[mode])]
        if mode == "ingest":
            return [*py, "ingest", str(self.big), "--attempt", f"big-{n}", "--task",
                    str(self.task), *db]
        if mode == "ingest-batch":
            return [*py, "ingest-batch", str(self.batch), *db]
        if mode == "replay":
            return [*py, "replay", str(REPO / "fixtures" / "seed003"), *db]
        return [sys.executable, "-c", self.recorder.WRITER, f"sqlite:///{self.dbs[mode]}",
                str(self.recorder.CAPTURE), f"live{n}"]

    def timed(self, mode: str) -> float:
        """A clean run's duration (into a scratch store), and the frames it stores."""
        scratch = self.work / f"clean-{mode}.db"
        cmd = [c if c != str(self.dbs[mode]) else str(scratch) for c in self.command(mode, 0)]
        started = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, timeout=600)
        took = time.perf_counter() - started
        for attempt, frames in self.frames(scratch).items():
            self.expected_frames.setdefault(_key(mode, attempt), frames)
        return took

    @staticmethod
    def frames(db: Path) -> dict[str, int]:
        import sqlite3

        conn = sqlite3.connect(db)
        try:
            rows = conn.execute("SELECT stream, count(*) FROM ts_events WHERE type = "
                                "'frame.received' GROUP BY stream").fetchall()
        finally:
            conn.close()
        return {stream.split(":", 1)[1]: count for stream, count in rows}

    @staticmethod
    def undecided(db: Path) -> list[str]:
        import sqlite3

        if not db.exists():
            return []
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute(
                "SELECT stream FROM ts_events WHERE type = 'attempt.started' AND stream NOT IN "
                "(SELECT stream FROM ts_events WHERE type = 'release.decided')").fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()
        return [r[0] for r in rows]

    def verify(self, db: Path) -> bool:
        if not db.exists():
            return True
        done = subprocess.run([sys.executable, "-m", "tracestore", "verify", "--json",
                               "--db", str(db)], capture_output=True, text=True, timeout=600)
        return done.returncode in (0, 4) and (done.returncode == 4
                                              or json.loads(done.stdout)["ok"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kills", nargs="?", type=int, default=100)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="kill-campaign-"))
    c = Campaign(work, args.deltas)
    durations = {mode: c.timed(mode) for mode in MODES if mode != "recorder"}
    durations["recorder"] = 2.0
    tally: Counter[str] = Counter()
    per_mode: Counter[str] = Counter()
    for n in range(1, args.kills + 1):
        mode = rng.choice(MODES)
        per_mode[mode] += 1
        db = c.dbs[mode]
        proc = subprocess.Popen(c.command(mode, n), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.3, 0.3 + durations[mode]))  # 0.3 s: the interpreter starts
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            tally["killed mid-run"] += 1
        else:
            tally["finished before the kill"] += 1
        proc.wait()
        tally["kills"] += 1
        if not c.verify(db):
            tally["verify failures"] += 1
        if mode == "recorder":
            problems, _state = c.recorder.check_round(f"sqlite:///{db}", f"live{n}")
            tally["recorder problems"] += len(problems)
            continue
        tally["undecided after kill"] += len(c.undecided(db))
        subprocess.run(c.command(mode, n), capture_output=True, timeout=600)  # the re-run
        missing = c.undecided(db)
        tally["missing decisions after re-run"] += len(missing)
        for attempt, frames in c.frames(db).items():
            key = _key(mode, attempt)
            if key in c.expected_frames and frames != c.expected_frames[key]:
                tally["partial attempts"] += 1
        if not c.verify(db):
            tally["verify failures"] += 1
    summary = {"kills": tally["kills"], "by_writer": dict(per_mode),
               "killed_mid_run": tally["killed mid-run"],
               "finished_before_the_kill": tally["finished before the kill"],
               "undecided_after_kill": tally["undecided after kill"],
               "missing_decisions_after_rerun": tally["missing decisions after re-run"],
               "partial_attempts": tally["partial attempts"],
               "verify_failures": tally["verify failures"],
               "recorder_problems": tally["recorder problems"],
               "clean_run_seconds": {k: round(v, 2) for k, v in durations.items()}}
    print(json.dumps(summary, indent=None if args.json else 2))
    shutil.rmtree(work, ignore_errors=True)
    bad = (summary["missing_decisions_after_rerun"] + summary["partial_attempts"]
           + summary["verify_failures"] + summary["recorder_problems"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
