"""Seed 000's consumer, judged from events: development cases, controlled failures, frame rules."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.contracts.frames import FrameChecker, FrameLimits
from tracestore.contracts.model import parse_contract_bytes
from tracestore.events import FrameRejected, StoredEvent
from tracestore.ingest import Bindings, plan_ingest
from tracestore.projections import decide_release
from tracestore.ingest.replay import parse_scenario, preview_replay
from clihelp import run

ROOT = Path(__file__).resolve().parents[1]
SEED000 = ROOT / "fixtures" / "seed000"
CONTRACT = parse_contract_bytes((ROOT / "fixtures" / "contracts" / "seed000-rag.json").read_bytes())


def binding(case: str) -> dict[str, Any]:
    return json.loads((SEED000 / f"{case}.binding.json").read_text(encoding="utf-8"))


def stored(plan_events: list[Any]) -> list[StoredEvent]:
    """An ingest plan as the store would hold it (positions 1, 2, …), without a database."""
    at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return [StoredEvent(i, e.id, e.stream, 1, e.event.type, 1, at, e.trace_id, e.event, "")
            for i, e in enumerate(plan_events, start=1)]


def ingest(data: bytes, *, bound: str | None = "replace-file", contract: Any = CONTRACT,
           chunk_size: int | None = None) -> tuple[list[StoredEvent], Any]:
    plan = plan_ingest(data, filename="x.ndjson", attempt_id="a", chunk_size=chunk_size,
                       bindings=Bindings(contract, binding(bound) if bound else None))
    events = stored(plan.events)
    return events, decide_release(events, "a")


# seed 000's development-case table: stream result, saved reply status, resolved citations;
# frames and bytes from its execution record (the derived NDJSON reproduces them exactly).
DEVELOPMENT = [
    ("utf8-write", "not_in_docs", [], 15, 2154),
    ("replace-file", "answered", [("path-write", "path-write:b71a2d18a53d86bf",
                                   "https://docs.python.org/3.12/library/pathlib.html"
                                   "#pathlib.Path.write_text")], 10, 1427),
    ("json-result-type", "answered", [("json-text", "json-text:8a17e251a41ccb3b",
                                       "https://docs.python.org/3.12/library/json.html"
                                       "#json.dumps")], 11, 1569),
    ("backup-schedule", "not_in_docs", [], 15, 2149),
]


@pytest.mark.parametrize(("case", "status", "citations", "frames", "size"), DEVELOPMENT)
@pytest.mark.parametrize("chunk_size", [None, 1, 7])
def test_development_cases_complete_with_the_seeds_citations(
        case: str, status: str, citations: list[tuple[str, str, str]], frames: int, size: int,
        chunk_size: int | None) -> None:
    data = (SEED000 / f"{case}.ndjson").read_bytes()
    assert len(data) == size
    events, d = ingest(data, bound=case, chunk_size=chunk_size)
    assert sum(e.type == "frame.received" for e in events) == frames
    assert (d.status, d.reasons) == ("released", (
        "normal_native_ending", "clean_drain", "contract_accepted"))
    report = d.contract.to_dict()
    assert report["reply"]["status"] == status
    assert [(c["source_id"], c["chunk_id"], c["url"]) for c in report["citations"]] == citations
    assert (report["binding"], report["citations_checked"]) == ("checked", True)


@pytest.mark.parametrize(("fixture", "status", "reasons"), [
    ("controlled-local-cancel.ndjson", "stopped", ("controlled_local_cancel",)),
    ("controlled-local-error.ndjson", "failed", ("controlled_local_error",)),
    ("controlled-transport-eof-before-terminal.ndjson", "interrupted",
     ("missing_terminal", "drain_eof")),
])
def test_controlled_failures_never_accept_an_answer(fixture: str, status: str,
                                                    reasons: tuple[str, ...]) -> None:
    _, d = ingest((SEED000 / fixture).read_bytes())
    assert (d.status, d.reasons, d.eligible, d.answer) == (status, reasons, False, None)
    assert d.contract is not None and d.contract.verdict is None  # never parsed


@pytest.mark.parametrize(("fixture", "kind", "status", "code"), [
    ("controlled-local-cancel.ndjson", "cancel", "stopped", "controlled_local_cancel"),
    ("controlled-local-error.ndjson", "error", "failed", "controlled_local_error"),
])
@pytest.mark.parametrize("reason", [None, "user", "upstream \x1b[31mfailed\x1b[0m"])
def test_a_terminal_frames_own_reason_stays_visible(fixture: str, kind: str, status: str,
                                                     code: str, reason: str | None) -> None:
    """Seed 000 reports the terminal frame's own ``reason``; the decision keeps its stable
    code and the contract report keeps the frame's words (the seed's own example: its
    reason is the code itself)."""
    data = (SEED000 / fixture).read_bytes()
    if reason is not None:
        data = data.replace(f'"reason":"{code}"'.encode(), json.dumps(
            {"reason": reason}, separators=(",", ":"))[1:-1].encode())
        assert code.encode() not in data
    _, d = ingest(data)
    assert (d.status, d.reasons) == (status, (code,))
    report = d.contract.to_dict()
    assert (report["local_terminal"], report["terminal_reason"]) == (kind, reason or code)


def test_a_completed_stream_names_its_done_terminal() -> None:
    _, d = ingest((SEED000 / "replace-file.ndjson").read_bytes())
    report = d.contract.to_dict()
    assert (report["local_terminal"], report["terminal_reason"]) == ("done", None)


def test_the_cli_shows_a_terminal_reason_escaped(tmp_path: Path) -> None:
    data = (SEED000 / "controlled-local-cancel.ndjson").read_bytes().replace(
        b'"reason":"controlled_local_cancel"', b'"reason":"user \\u001b[2J"')
    capture = tmp_path / "cancel.ndjson"
    capture.write_bytes(data)
    db = tmp_path / "s.db"
    code, _, err = run("ingest", str(capture), "--attempt", "c",
                       "--contract", str(ROOT / "fixtures/contracts/seed000-rag.json"),
                       "--binding", str(SEED000 / "replace-file.binding.json"), db=db)
    assert code == 0, err
    code, shown, _ = run("release", "c", db=db)
    assert code == 0 and "cancel frame reason: user" in shown and "\x1b" not in shown
    got = json.loads(run("release", "c", "--json", db=db)[1])
    assert got["contract"]["terminal_reason"] == "user \x1b[2J"


def test_controlled_transport_io_error_keeps_the_partial_trace() -> None:
    scenario = parse_scenario(json.loads(
        (SEED000 / "controlled-transport-io-error.json").read_text(encoding="utf-8")))
    _, events = preview_replay(scenario)
    d = decide_release(events, "seed000-io-error")
    # seed 000's result is status ``error``: under its own profile a transport I/O error
    # is a failure the consumer observed, not a stream that merely stopped (EOF)
    assert (d.status, d.reasons, d.answer) == ("failed",
                                               ("missing_terminal", "transport_io_error"), None)
    assert sum(e.type == "frame.received" for e in events) == 2


def test_a_malformed_frame_mid_capture_is_recorded_with_its_offset() -> None:
    data = (SEED000 / "malformed-frame-4.ndjson").read_bytes()
    events, d = ingest(data)
    assert sum(e.type == "frame.received" for e in events) == 3
    rejected = [e.event for e in events if isinstance(e.event, FrameRejected)]
    offset = sum(len(line) + 1 for line in data.split(b"\n")[:3])
    assert [(r.code, r.offset, r.index) for r in rejected] == [("invalid_frame_json", offset, 3)]
    assert (d.status, d.reasons) == ("held", ("invalid_frame_json",))
    assert d.decided_at_position == next(e.position for e in events if e.type == "frame.rejected")


def test_frames_bound_to_another_request_are_never_released() -> None:
    events, d = ingest((SEED000 / "replace-file.ndjson").read_bytes(), bound="json-result-type")
    assert (d.status, d.reasons) == ("held", ("frame_request_mismatch",))
    first = next(e.position for e in events if e.type == "frame.received")
    assert d.decided_at_position == first


def test_without_a_binding_the_reply_is_held_and_the_binding_is_unknown() -> None:
    _, d = ingest((SEED000 / "replace-file.ndjson").read_bytes(), bound=None)
    assert (d.status, d.reasons) == ("held", ("no_request_binding",))
    report = d.contract.to_dict()
    assert (report["binding"], report["citations_checked"], report["code"]) == (
        "unknown", False, "ok")


def test_a_structured_profile_without_a_contract_holds() -> None:
    _, d = ingest((SEED000 / "replace-file.ndjson").read_bytes(), contract=None)
    assert (d.status, d.reasons) == ("held", ("no_contract",))


def frames_of(*texts: str, terminal: str = "done", case: str = "replace-file") -> bytes:
    from tracestore.providers.app_frames import binding_digest

    digest = binding_digest(binding(case))
    out = [{"sequence": i, "kind": "content_delta", "binding_sha256": digest, "text": t}
           for i, t in enumerate(texts, start=1)]
    out.append({"sequence": len(out) + 1, "kind": terminal, "binding_sha256": digest})
    return "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in out).encode()


@pytest.mark.parametrize(("texts", "reasons"), [
    (['{"status": "answered", "answer": "Yes.", "source_ids": ["path-read"]}'],
     ("unknown_context_citation",)),           # in the corpus, but not bound to this request
    (['{"status": "answered", ', '"status": "answered"}'],
     ("invalid_answer_json", "duplicate_json_key")),
    (['{"status": "answered", "answer": NaN, "source_ids": []}'],
     ("invalid_answer_json", "invalid_json_constant")),
    (['{"status": "answered", "answer": "Yes.", "source_ids": []}'],
     ("status_citation_mismatch",)),
    (['{"status": "not_in_docs", "answer": "No.", "source_ids": [], "url": "https://x"}'],
     ("invalid_answer_schema",)),
])
def test_reply_failures_are_rejected_with_the_seeds_codes(texts: list[str],
                                                          reasons: tuple[str, ...]) -> None:
    _, d = ingest(frames_of(*texts))
    assert (d.status, d.reasons) == ("rejected", reasons)


def test_an_empty_structured_candidate_is_never_released() -> None:
    data = frames_of(terminal="done")
    _, d = ingest(data)
    assert (d.status, d.reasons) == ("held", ("empty_answer",))


H = "0" * 64
LIMITS = FrameLimits(frame_bytes=200, total_bytes=1000, content_chars=10, frames=3)


def delta(seq: Any, text: Any = "x", **extra: Any) -> dict[str, Any]:
    return {"sequence": seq, "kind": "content_delta", "binding_sha256": H, "text": text, **extra}


@pytest.mark.parametrize(("frames", "code"), [
    ([delta(1, debug=True)], "invalid_frame_schema"),
    (["text"], "invalid_frame_schema"),
    ([{"sequence": 1, "kind": "done", "binding_sha256": H, "reason": "x"}], "invalid_frame_schema"),
    ([{"sequence": 1, "kind": "stop", "binding_sha256": H}], "invalid_frame_schema"),
    ([delta(2)], "invalid_sequence"),
    ([delta(True)], "invalid_sequence"),
    ([delta(1), delta(1)], "invalid_sequence"),
    ([delta(1, "")], "invalid_content_delta"),
    ([delta(1, 5)], "invalid_content_delta"),
    ([delta(1, "\ud800")], "invalid_content_delta"),
    ([{**delta(1), "binding_sha256": "1" * 64}], "frame_request_mismatch"),
    ([{"sequence": 1, "kind": "error", "binding_sha256": H, "reason": ""}],
     "invalid_terminal_reason"),
    ([{"sequence": 1, "kind": "cancel", "binding_sha256": H, "reason": "r" * 257}],
     "invalid_terminal_reason"),
    ([{"sequence": 1, "kind": "done", "binding_sha256": H}, delta(2)], "frame_after_terminal"),
    ([delta(1, "x" * 11)], "content_limit"),
    ([delta(1), delta(2), delta(3), delta(4)], "frame_count_limit"),
    ([delta(1, "y" * 300)], "frame_byte_limit"),
    ([delta(1, "y" * 5), delta(2, "y" * 5), {"sequence": 3, "kind": "error",
      "binding_sha256": H, "reason": "r" * 150}], "stream_byte_limit"),
])
def test_frame_rules_name_the_first_failure(frames: list[Any], code: str) -> None:
    limits = {"invalid_terminal_reason": FrameLimits(),
              "stream_byte_limit": FrameLimits(total_bytes=300)}.get(code, LIMITS)
    checker = FrameChecker(limits, H)
    got = [checker.check(f, None) for f in frames]
    assert got[-1] == code and all(g is None for g in got[:-1])


def test_seed_bounds_are_the_profile_limits() -> None:
    from tracestore.projections.profiles import PROFILES

    limits = PROFILES["app-frames-structured"].limits
    assert (limits.frame_bytes, limits.total_bytes, limits.content_chars, limits.frames) == (
        8192, 65536, 16384, 1000)


def test_ingest_with_contract_and_binding_on_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out, err = run("ingest", str(SEED000 / "replace-file.ndjson"), "--attempt", "rf",
                         "--contract", str(ROOT / "fixtures/contracts/seed000-rag.json"),
                         "--binding", str(SEED000 / "replace-file.binding.json"), db=db)
    assert code == 0, err
    code, out, _ = run("release", "rf", "--json", db=db)
    got = json.loads(out)
    assert (got["status"], got["contract"]["citations"][0]["source_id"]) == ("released",
                                                                             "path-write")
    # the same trace cannot be bound to another request
    code, _, err = run("ingest", str(SEED000 / "json-result-type.ndjson"), "--attempt", "rf2",
                       "--trace", "rf", "--binding",
                       str(SEED000 / "json-result-type.binding.json"), db=db)
    assert code == 2 and "trace_conflict" in err


def test_a_bad_binding_file_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    bad = tmp_path / "b.json"
    bad.write_text('{"selected_context": "all of it"}')
    code, _, err = run("ingest", str(SEED000 / "replace-file.ndjson"), "--binding", str(bad),
                       db=db)
    assert code == 2
    assert err.startswith("error[invalid_binding]: the request binding has no selected_context")
    assert not db.exists() or run("events", "--json", db=db)[1] == ""


def test_the_recorder_binds_a_contract_and_request_to_a_live_trace(tmp_path: Path) -> None:
    from tracestore import Recorder
    from tracestore.errors import InputError

    source = json.loads((ROOT / "fixtures/contracts/seed000-rag.json").read_text())
    with Recorder(f"sqlite:///{tmp_path / 'live.db'}") as rec:
        trace = rec.trace("q", contract=source, binding=binding("replace-file"))
        attempt = trace.attempt("live", api="app-frames")
        data = (SEED000 / "replace-file.ndjson").read_bytes()
        for start in range(0, len(data), 11):  # arbitrary transport fragments
            attempt.feed(data[start:start + 11])
        attempt.drain()
        d = attempt.decision()
        assert (d.status, d.reasons) == ("released", (
            "normal_native_ending", "clean_drain", "contract_accepted"))
        assert d.contract.to_dict()["citations"][0]["source_id"] == "path-write"
        rec.trace("q", contract=source, binding=binding("replace-file"))  # same: no-op
        with pytest.raises(InputError) as caught:
            rec.trace("q", binding=binding("json-result-type"))
        assert caught.value.code == "trace_conflict"
        with pytest.raises(InputError) as caught:
            rec.trace("q2", binding={"selected_context": 3})
        assert caught.value.code == "invalid_binding"


def test_a_stream_ending_inside_a_frame_or_a_character_is_held_with_the_seeds_code() -> None:
    data = (SEED000 / "replace-file.ndjson").read_bytes()
    cut = data[:-20]  # inside the done frame
    events, d = ingest(cut)
    assert (d.status, d.reasons) == ("held", ("truncated_frame",))
    rejected = [e.event for e in events if isinstance(e.event, FrameRejected)]
    assert [(r.code, r.offset) for r in rejected] == [
        ("truncated_frame", data.rindex(b"\n", 0, len(data) - 1) + 1)]
    bangla = frames_of('{"status": ', '"answered", "answer": "ক"')
    inside = bangla[:bangla.index("ক".encode()) + 1]
    _, d = ingest(inside)
    assert (d.status, d.reasons) == ("held", ("truncated_utf8",))


def test_without_a_binding_the_review_says_unknown(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    assert run("ingest", str(SEED000 / "replace-file.ndjson"), "--attempt", "nb", "--contract",
               str(ROOT / "fixtures/contracts/seed000-rag.json"), db=db)[0] == 0
    fields = {f["name"]: f for f in json.loads(run("review", "nb", "--format", "json",
                                                   db=db)[1])["fields"]}
    assert fields["candidate"]["value"].endswith(
        "structured reply under contract seed000-rag: ok; binding UNKNOWN (none recorded)")
    assert "Ineligible: held" in fields["release_decision"]["value"]
