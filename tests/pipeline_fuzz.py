"""Mutated real captures through the whole path: decode → plan → serialize → append →
verify → release → audit → review.  Shared by ``tests/test_pipeline_fuzz.py`` (sized for
CI) and ``bench/fuzz_pipeline.py`` (the long run that fills docs/store.md's table).

The property: every case either is refused with a ``TracestoreError`` (a stable code,
exit 2/3/4 at the CLI) or is stored, verifies, and projects -- never another exception.
Cases are cheap because many mutated captures share one in-memory store and one append
transaction per batch; a batch that the store refuses is retried one plan at a time so
the culprit is named.
"""

from __future__ import annotations

import random
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracestore.errors import TracestoreError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Fragments that reach the seams issue 14 found: lone surrogates, overflowing numbers, deep
# nesting, non-string "kind", C1/bidi text, CR floods, NUL, duplicate keys, bad UTF-8.
HOSTILE: tuple[bytes, ...] = (
    b'"\\ud83d"', b'"\\ude00x"', b"1e999", b"-1e400", b"[" * 300, b"{\"a\":" * 200,
    b'{"kind":[1],"sequence":1}', b'{"kind":{"a":1}}', "\u009b31m\u202e\u2028".encode(),
    b"\r" * 64, b"\n\n\n\n", b"\x00", b'"\\u0000"', b'{"a":1,"a":2}', b"\xff\xfe",
    b"12345678901234567890123456789012345678901234567890", b"NaN", b"data: [DONE]\n\n",
    b'"type":"response.completed"', b'"type":["x"]', b'"delta":{"text":7}', b"null",
    b"\xef\xbb\xbf", b'\\"', b"event: error\n", b"\r\n\r\n", b"]", b"}", b",",
)


def seeds(max_bytes: int | None = None) -> list[tuple[str, bytes]]:
    """Real captures and projections as (file name, bytes), smallest first."""
    found = []
    for path in sorted((FIXTURES / "real").rglob("*")) + sorted((FIXTURES / "projections")
                                                              .glob("*.json")):
        if path.is_file() and path.suffix != ".md":
            data = path.read_bytes()
            if max_bytes is None or len(data) <= max_bytes:
                found.append((path.name, data))
    return sorted(found, key=lambda item: len(item[1]))


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to three random edits: flips, hostile insertions, deletions, duplications, cuts."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        size = len(out)
        at = rng.randrange(size + 1)
        op = rng.randrange(7)
        if op == 0 and size:
            out[min(at, size - 1)] ^= 1 << rng.randrange(8)
        elif op in (1, 2):
            out[at:at] = rng.choice(HOSTILE)
        elif op == 3 and size:
            del out[at:at + rng.randint(1, 64)]
        elif op == 4 and size:
            piece = out[at:at + rng.randint(1, 256)]
            out[at:at] = piece
        elif op == 5:
            del out[at:]
        else:  # replace a byte inside a JSON string-ish area with a multi-byte character
            out[at:at] = rng.choice(["é", "😀", "\u2029", "\U0010ffff"]).encode()
    return bytes(out)


@dataclass
class Tally:
    cases: int = 0
    planned: int = 0
    stored_events: int = 0
    projected: int = 0
    batches: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    unstorable: list[tuple[int, str]] = field(default_factory=list)
    "Plans the store refused: decoded but not storable (the seam issue 14 closes)."
    crashes: list[tuple[int, str, str]] = field(default_factory=list)
    "Anything that was not a TracestoreError: (case, stage, exception)."
    verify_failures: list[str] = field(default_factory=list)

    @property
    def internal_errors(self) -> int:
        return len(self.crashes) + len(self.unstorable) + len(self.verify_failures)


def _crash(tally: Tally, case: int, stage: str, exc: BaseException) -> None:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    tally.crashes.append((case, stage, f"{type(exc).__name__}: {str(exc)[:120]}{where}"))


def _project(store: Any, plan: Any, template: Any, tally: Tally, case: int) -> None:
    from tracestore.projections import audit, decide_release
    from tracestore.review.escape import json_text
    from tracestore.review.record import fill_record
    from tracestore.review.render import render_json, render_markdown

    stage = "read"
    try:
        events = store.read(trace_id=plan.trace_id)
        stage = "release"
        decision = decide_release(events, plan.attempt_id)
        json_text(decision.to_dict())
        stage = "audit"
        json_text(audit(events, trace_id=plan.trace_id).to_dict())
        stage = "review"
        record = fill_record(template, events, plan.attempt_id, version="fuzz")
        render_markdown(record)
        render_json(record)
        tally.projected += 1
    except TracestoreError as exc:
        tally.refused[f"{stage}:{exc.code}"] += 1
    except Exception as exc:  # noqa: BLE001 - the property under test
        _crash(tally, case, stage, exc)


def _flush(store: Any, pending: list[tuple[int, Any]], template: Any, tally: Tally,
           project_every: int) -> None:
    tally.batches += 1
    try:
        store.append([e for _, plan in pending for e in plan.events],
                     blob_data=[plan.blob for _, plan in pending])
    except Exception:  # noqa: BLE001 - find which plan the store refused
        for case, plan in pending:
            try:
                store.append(plan.events, blob_data=[plan.blob])
            except TracestoreError as exc:
                tally.unstorable.append((case, exc.code))
            except Exception as exc:  # noqa: BLE001
                _crash(tally, case, "append", exc)
    tally.stored_events += sum(len(plan.events) for _, plan in pending)
    for case, plan in pending:
        if case % project_every == 0:
            _project(store, plan, template, tally, case)


def _verify(store: Any, tally: Tally) -> None:
    result = store.verify()
    if not result.ok:
        tally.verify_failures.append(f"after batch {tally.batches}: {result.reason}")


def run_cases(count: int, *, seed: int = 14, url: str = "sqlite://", batch: int = 200,
              project_every: int = 1, max_seed_bytes: int | None = None,
              batches_per_store: int = 5) -> Tally:
    """Run ``count`` mutated cases; every ``project_every``-th stored case is also read
    back through release, audit and review.

    A fresh store every ``batches_per_store`` batches, verified whole before it is
    dropped, keeps each verify (a walk of the whole log) bounded: verifying one growing
    store after every batch would make the run quadratic.
    """
    from tracestore.store.bulk import paused_gc
    from tracestore.ingest import plan_ingest
    from tracestore.review.templates import load_template
    from tracestore.store.log import EventStore

    rng = random.Random(seed)
    corpus = seeds(max_seed_bytes)
    template = load_template()
    tally = Tally()
    pending: list[tuple[int, Any]] = []
    store = EventStore(url)
    with paused_gc():
        for case in range(count):
            name, data = corpus[rng.randrange(len(corpus))]
            mutated = mutate(rng, data)
            tally.cases += 1
            try:
                plan = plan_ingest(mutated, filename=name if rng.random() < 0.8 else None,
                                   attempt_id=f"c{case}")
            except TracestoreError as exc:
                tally.refused[exc.code] += 1
                continue
            except Exception as exc:  # noqa: BLE001 - the property under test
                _crash(tally, case, "plan", exc)
                continue
            tally.planned += 1
            pending.append((case, plan))
            if len(pending) >= batch:
                _flush(store, pending, template, tally, project_every)
                pending = []
                if tally.batches % batches_per_store == 0:
                    _verify(store, tally)
                    store.close()
                    store = EventStore(url)
        if pending:
            _flush(store, pending, template, tally, project_every)
        _verify(store, tally)
        store.close()
    return tally
