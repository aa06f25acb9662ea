"""Issue 19, part 2: seed rules 000/001/003/004 the product did not follow (each test here
failed before its fix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.events import FrameRejected
from tracestore.providers.app_frames import binding_digest

from test_contracts_seed000 import binding, ingest

ROOT = Path(__file__).resolve().parents[1]
SEED000 = ROOT / "fixtures" / "seed000"
MAX_FRAME_BYTES, MAX_TOTAL_BYTES = 8192, 65536


def frame_line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def stream_of(deltas: list[str]) -> bytes:
    digest = binding_digest(binding("replace-file"))
    frames = [{"sequence": i, "kind": "content_delta", "binding_sha256": digest, "text": t}
              for i, t in enumerate(deltas, start=1)]
    frames.append({"sequence": len(frames) + 1, "kind": "done", "binding_sha256": digest})
    return b"".join(frame_line(f) for f in frames)


REPLY_END = '", "source_ids": ["path-write"]}'


def padded_stream(frame_size: int, total: int | None = None) -> bytes:
    """A replace-file stream whose first delta (JSON whitespace before the reply) is
    ``frame_size`` bytes without its newline; with ``total``, the answer is padded with
    4-byte characters (within the content bound) and a second whitespace delta makes the
    stream exactly ``total`` bytes, newlines included."""
    base = len(stream_of([""]).splitlines(keepends=True)[0]) - 1
    deltas = [" " * (frame_size - base), " ", '{"status": "answered", "answer": "Yes.']
    if total is not None:
        while total - len(stream_of([*deltas, REPLY_END])) > 8200:
            deltas.append("\U0001F600" * 2000)
        deltas.append("\U0001F600" * ((total - len(stream_of([*deltas, REPLY_END])) - 300) // 4))
    deltas.append(REPLY_END)
    if total is not None:
        deltas[1] += " " * (total - len(stream_of(deltas)))  # text length keeps sequences
    data = stream_of(deltas)
    assert len(data.split(b"\n")[0]) == frame_size
    assert total is None or len(data) == total
    return data


def test_a_frame_of_exactly_max_frame_bytes_without_its_newline_is_accepted() -> None:
    _, d = ingest(padded_stream(MAX_FRAME_BYTES))
    assert (d.status, d.reasons) == ("released", (
        "normal_native_ending", "clean_drain", "contract_accepted"))


def test_a_frame_one_byte_over_max_frame_bytes_is_rejected() -> None:
    _, d = ingest(padded_stream(MAX_FRAME_BYTES + 1))
    assert (d.status, d.reasons) == ("held", ("frame_byte_limit",))


def test_a_stream_of_exactly_max_total_bytes_is_accepted_and_one_more_is_not() -> None:
    _, d = ingest(padded_stream(200, MAX_TOTAL_BYTES))
    assert (d.status, d.reasons) == ("released", (
        "normal_native_ending", "clean_drain", "contract_accepted"))
    _, d = ingest(padded_stream(200, MAX_TOTAL_BYTES + 1))
    assert (d.status, d.reasons) == ("held", ("stream_byte_limit",))


def test_a_final_frame_without_its_newline_is_not_a_frame() -> None:
    data = (SEED000 / "replace-file.ndjson").read_bytes()
    assert data.endswith(b"}\n")
    cut = data[:-1]  # the done frame is whole JSON, but not a complete line
    events, d = ingest(cut)
    assert d.answer is None and d.status == "held"
    assert d.reasons == ("truncated_frame",)
    rejected = [e.event for e in events if isinstance(e.event, FrameRejected)]
    assert [(r.code, r.offset) for r in rejected] == [
        ("truncated_frame", data.rindex(b"\n", 0, len(data) - 1) + 1)]
    assert sum(e.type == "frame.received" for e in events) == data.count(b"\n") - 1


# --- seed 000: a binding is checked for internal consistency before use -----------------

CONTRACT_FILE = ROOT / "fixtures" / "contracts" / "seed000-rag.json"
INJECTED = "https://evil.example/phish"


def inconsistent(case: str) -> dict[str, dict[str, Any]]:
    good = binding("replace-file")
    hash_edit = {**good, "request_sha256": "0" * 64}
    url_edit = json.loads(json.dumps(good))
    url_edit["selected_context"][0]["url"] = INJECTED
    foreign = json.loads(json.dumps(good))
    foreign["selected_context"][0]["chunk_id"] = "path-write:" + "1" * 16
    context_edit = json.loads(json.dumps(good))
    context_edit["selected_context"][0]["text"] = "An existing file is kept."
    return {"hash": hash_edit, "url": url_edit, "foreign": foreign,
            "context": context_edit}[case]


BAD_BINDINGS = [("hash", "recorded_request_mismatch"), ("url", "binding_corpus_mismatch"),
                ("foreign", "binding_corpus_mismatch"),
                ("context", "recorded_context_mismatch")]


@pytest.mark.parametrize(("case", "code"), BAD_BINDINGS)
def test_an_inconsistent_binding_holds_with_its_code_and_resolves_no_citation(
        case: str, code: str) -> None:
    from tracestore.ingest import Bindings, plan_ingest
    from tracestore.projections import decide_release

    from test_contracts_seed000 import CONTRACT, stored

    bad = inconsistent(case)
    data = stream_of(['{"status": "answered", "answer": "Yes.", "source_ids": ["path-write"]}'])
    data = data.replace(binding_digest(binding("replace-file")).encode(),
                        binding_digest(bad).encode())
    plan = plan_ingest(data, filename="x.ndjson", attempt_id="a",
                       bindings=Bindings(CONTRACT, bad))
    d = decide_release(stored(plan.events), "a")
    assert (d.status, d.reasons, d.answer) == ("held", (code,), None)
    assert INJECTED not in json.dumps(d.to_dict() if hasattr(d, "to_dict") else str(d))


@pytest.mark.parametrize(("case", "code"), BAD_BINDINGS)
def test_an_inconsistent_binding_file_is_refused_and_nothing_written(
        tmp_path: Path, case: str, code: str) -> None:
    from clihelp import run

    db = tmp_path / "s.db"
    path = tmp_path / "b.json"
    path.write_text(json.dumps(inconsistent(case)))
    rc, _, err = run("ingest", str(SEED000 / "replace-file.ndjson"), "--contract",
                     str(CONTRACT_FILE), "--binding", str(path), db=db)
    assert rc == 2 and err.startswith(f"error[{code}]: inconsistent request binding")
    assert not db.exists() or run("events", "--json", db=db)[1] == ""


def test_the_seed_bindings_are_consistent() -> None:
    from tracestore.contracts.binding import inconsistency

    for case in ("utf8-write", "replace-file", "json-result-type", "backup-schedule"):
        assert inconsistency(binding(case)) is None
    seed004 = json.loads((ROOT / "fixtures/seed004/faq.binding.json").read_text())
    assert inconsistency(seed004) is None


# --- seed 000: an invalid stream keeps its valid prefix and the rejection at byte N -----

REAL = ROOT / "fixtures" / "real"


def plan_decision(data: bytes, filename: str) -> tuple[list[Any], Any]:
    from tracestore.ingest import plan_ingest
    from tracestore.projections import decide_release

    from test_contracts_seed000 import stored

    events = stored(plan_ingest(data, filename=filename, attempt_id="a").events)
    return events, decide_release(events, "a")


def test_bad_utf8_inside_a_recognized_stream_keeps_the_prefix_and_holds() -> None:
    data = (REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse").read_bytes()
    blocks = data.split(b"\n\n")
    good = b"\n\n".join(blocks[:3]) + b"\n\n"
    bad_at = len(good) + len(b"data: ")
    events, d = plan_decision(good + b"data: \xff\xfe\n\n" + data[len(good):], "x.sse")
    received = [e for e in events if e.type == "frame.received"]
    assert len(received) == 3
    rejected = [(e.event.code, e.event.offset) for e in events if e.type == "frame.rejected"]
    assert rejected == [("invalid_utf8", bad_at)]
    assert (d.status, d.reasons, d.answer) == ("held", ("invalid_utf8",), None)


def test_input_that_is_not_a_recognizable_stream_is_still_refused() -> None:
    from tracestore.errors import WireError
    from tracestore.ingest import plan_ingest

    with pytest.raises(WireError) as caught:
        plan_ingest(b'{"hello": 1}\n{"x": "\xff"}\n', filename="x.ndjson", attempt_id="a")
    assert (caught.value.code, caught.value.offset) == ("invalid_utf8", 20)
    with pytest.raises(WireError) as caught:  # bad bytes in the very first frame
        plan_ingest(b'data: {"x": "\xff"}\n\n', filename="x.sse", attempt_id="a")
    assert caught.value.code == "invalid_utf8"


# --- seed 004: the envelope ---------------------------------------------------------------

SEED004 = ROOT / "fixtures" / "seed004"


def faq_stream(chunks: list[str], envelope: dict[str, Any]) -> bytes:
    out = [f"event: chunk\ndata: {json.dumps({'text': c}, ensure_ascii=False)}\n\n"
           for c in chunks]
    out.append(f"event: done\ndata: {json.dumps(envelope, ensure_ascii=False)}\n\n")
    return "".join(out).encode()


def faq_envelope(state: str, text: str, result: Any = None) -> dict[str, Any]:
    return {"schema_version": 2, "state": state, "text": text,
            "code": "ok" if state == "ok" else state, "retryable": False, "result": result}


def test_the_envelope_result_is_the_internal_answer_without_schema_version() -> None:
    from test_contracts_seed004 import judge

    _, _, envelope = judge("good-v2")
    assert envelope.result == {
        "answer": "You can return a new bike within 30 days.", "cited_ids": ["kc-returns-v3"],
        "confidence": "high", "status": "answered",
        "links": ["https://help.kestrelcycles.example/returns"]}
    v1 = {"schema_version": 1, "answer": "30 days.", "cited_ids": ["kc-returns-v3"],
          "confidence": "high", "status": "answered"}
    decision, _, envelope = judge("good-v2", data=faq_stream(
        ["30 days."], faq_envelope("ok", "30 days.", v1)))
    assert decision.status == "released"
    assert envelope.result == {"answer": "30 days.", "cited_ids": ["kc-returns-v3"],
                               "confidence": "high", "status": "answered", "links": []}


def test_an_endpoint_stream_ending_done_with_no_chunks_is_the_empty_state() -> None:
    from tracestore.projections.envelope import NO_ANSWER
    from test_contracts_seed004 import judge

    decision, _, envelope = judge("good-v2", data=faq_stream([], faq_envelope("empty",
                                                                             NO_ANSWER)))
    assert (decision.status, decision.reasons) == ("held", ("empty_answer",))
    assert envelope.to_dict() == {"schema_version": 2, "state": "empty", "text": NO_ANSWER,
                                  "code": "empty", "retryable": False, "result": None}


def test_one_name_per_stop_code_in_contract_check_and_the_envelope() -> None:
    from tracestore.projections.envelope import project_envelope
    from tracestore.contracts.regression import RegressionCase, replay_case
    from tracestore.events import TaskRule
    from tracestore.ingest import plan_ingest
    from tracestore.projections.release import decide_with_view

    from test_contracts_seed000 import stored
    from test_contracts_seed004 import CONTRACT

    checked = replay_case(CONTRACT, RegressionCase(name="r", raw="", stop="other",
                                                   expect="unusable_stop"))
    data = (REAL / "anthropic" / "stop-sequence.sse").read_bytes()
    plan = plan_ingest(data, filename="s.sse", attempt_id="a",
                       task=TaskRule(answer_patterns=("",)))
    decision, view = decide_with_view(stored(plan.events), "a")
    assert decision.reasons == ("unknown_stop_reason",)
    envelope = project_envelope(decision, view)
    assert (envelope.state, envelope.code, envelope.retryable) == ("error", checked, False)
    assert checked == "unusable_stop"


def test_an_error_event_after_done_holds_the_decision_itself() -> None:
    from test_contracts_seed004 import judge

    late = (b'event: error\ndata: {"schema_version":2,"state":"error","text":"Sorry",'
            b'"code":"stream_error","retryable":true,"result":null}\n\n')
    decision, _, envelope = judge("good-v2", data=(SEED004 / "good-v2.sse").read_bytes() + late)
    assert (decision.status, decision.reasons) == ("held", ("event_after_terminal",))
    assert (envelope.state, envelope.code) == ("error", "event_after_terminal")


def faq_plain(chars: int) -> tuple[Any, Any]:
    from tracestore.projections.envelope import project_envelope
    from tracestore.events import TaskRule
    from tracestore.ingest import plan_ingest
    from tracestore.projections.release import decide_with_view

    from test_contracts_seed000 import stored

    text = ("The shop is open. " * 300)[:chars]
    chunks = [text[i:i + 16] for i in range(0, len(text), 16)]
    plan = plan_ingest(faq_stream(chunks, faq_envelope("ok", text)), filename="f.sse",
                       attempt_id="a", task=TaskRule(answer_patterns=("",)))
    assert plan.api == "faq-endpoint"
    decision, view = decide_with_view(stored(plan.events), "a")
    return decision, project_envelope(decision, view)


def test_a_plain_text_answer_over_the_seeds_stream_bound_is_rejected_not_cut() -> None:
    decision, envelope = faq_plain(4000)
    assert (decision.status, len(decision.answer)) == ("released", 4000)
    decision, envelope = faq_plain(4001)
    assert (decision.status, decision.reasons, decision.answer) == (
        "rejected", ("too_large",), None)
    assert (envelope.state, envelope.code, envelope.result) == ("error", "too_large", None)


# --- seed 001: grade reads what the re-derivation admitted; question and version checks ---


def test_grade_reads_only_the_observations_the_rederivation_admitted() -> None:
    import copy

    from agenthelp import cases, run_of, trial
    from tracestore.agent.grading import grade

    value = copy.deepcopy(trial("overwrite-agent-1"))
    # the first decision proposes a search the recorded observation did not run: the
    # re-derivation fails there, so nothing after it was admitted
    value["result"]["decisions"][0]["query"] = "something else entirely"
    recorded, admission = run_of(value)
    assert admission.status == "failed" and admission.observations == ()
    g = grade(recorded, cases()[value["case_id"]], admission)
    assert g.checks["retrieval_targets_read"] is False
    assert g.checks["trajectory"]["queries"] == []
    assert g.checks["trajectory"]["refined"] is False
    good, admitted = run_of(trial("overwrite-agent-1"))
    assert grade(good, cases()[value["case_id"]],
                 admitted).checks["retrieval_targets_read"] is True


@pytest.mark.parametrize(("key", "value", "code"), [
    ("question", "   ", "invalid_question"), ("question", "q" * 513, "invalid_question"),
    ("version", "3", "invalid_version"), ("version", "3.12.1", "invalid_version"),
    ("version", "v3.12", "invalid_version"),
])
def test_a_run_with_an_invalid_question_or_version_is_refused_as_the_seed_does(
        key: str, value: str, code: str) -> None:
    import copy

    from agenthelp import events_of, trial
    from tracestore.errors import InputError

    run = copy.deepcopy(trial("overwrite-agent-1"))
    run["result"][key] = value
    with pytest.raises(InputError) as caught:
        events_of(run)
    assert caught.value.code == code


# --- seed 003: one answer and one matching history entry after release ---------------------


def test_a_released_answer_that_never_reached_history_is_a_named_violation() -> None:
    from tracestore.projections import audit

    from test_verdicts_retry import _app_write, scenario

    ui = {"destination": "ui", "attempt": "retry", "text": "It is Paris."}
    events = scenario(_app_write("first", "Paris."), ui, destinations="application")
    got = [(v.code, v.attempt_id, v.destination) for v in audit(events).violations]
    assert got == [("missing_destination_write", "retry", "history")]
    events = scenario(_app_write("first", "Paris."), _app_write("retry", "It is Paris."),
                      destinations="application")
    assert audit(events).violations == ()
    assert audit(scenario()).violations == ()  # the harness follows the policy itself
    only_ui = scenario({**ui, "attempt": "first", "text": "Paris."}, ui,
                       destinations="application")
    assert audit(only_ui).violations == ()  # a log of ui writes says nothing of history


# --- seed 003: export/copy a profile requires, duplicates, and the review's actual fields ---

EVERY = "bedrock-converse-text-every-destination"
HISTORY_WHY = ("required by seed 003: one matching history entry; the application records "
               "its history writes")
EVERY_WHY = f"required by profile {EVERY}"


def _seed003(*writes: tuple[str, str, str], profile: str | None = None) -> list[Any]:
    """Two attempts of one turn (``first`` released, then its retry released) and the
    application's own writes ``(destination, attempt, text)``."""
    from tracestore.replay import parse_scenario, preview_replay

    from test_verdicts_retry import BR, TASK, answer

    steps = [{"open": "r1", "attempt": "first", "api": BR}, *answer("r1", "Paris."),
             {"open": "r2", "attempt": "retry", "api": BR, "retry_of": "first"},
             *answer("r2", "It is Paris."),
             *({"destination": d, "attempt": a, "text": t} for d, a, t in writes)]
    scenario = {"trace": "turn", "task": TASK, "steps": steps, "destinations": "application"}
    if profile is not None:
        scenario["profile"] = profile
    return preview_replay(parse_scenario(scenario))[1]


def _violations(events: list[Any]) -> list[tuple[str, str, str, int, str]]:
    from tracestore.projections import audit

    return [(v.code, v.attempt_id, v.destination, v.position, v.message)
            for v in audit(events).violations]


def _review_fields(events: list[Any], attempt: str = "retry") -> tuple[str, str]:
    """The application record's ``actual_destinations`` and the trace review's
    ``accepted_destinations``, as rendered."""
    from tracestore.review import fill_record, load_template

    def value(template: str, name: str) -> str:
        record = fill_record(load_template(template), events, attempt, version="")
        return next(f.value for f in record.fields if f.name == name)

    return (value("application-record", "actual_destinations"),
            value("trace-review", "accepted_destinations"))


RETRY = "It is Paris."


def test_the_review_says_which_required_destination_the_answer_never_reached() -> None:
    events = _seed003(("history", "first", "Paris."), ("ui", "retry", RETRY))
    assert _violations(events) == [(
        "missing_destination_write", "retry", "history", 15,
        f"the released answer never reached history ({HISTORY_WHY})")]
    actual, accepted = _review_fields(events)
    tail = (f"ui #19 — written by: application; history: MISSING ({HISTORY_WHY}); audit: 1 "
            "violation: missing_destination_write (history) at #15")
    assert actual == f"Actual: {tail}"
    assert accepted == ("Expected: the released answer once each in ui, history, export and "
                        f"copy; actual: {tail}")


def test_a_profile_requiring_export_and_copy_names_each_one_the_answer_never_reached() -> None:
    from tracestore.projections import decide_release

    events = _seed003(("ui", "retry", RETRY), ("history", "retry", RETRY), profile=EVERY)
    assert _violations(events) == [
        ("missing_destination_write", "retry", d, 15,
         f"the released answer never reached {d} ({EVERY_WHY})") for d in ("export", "copy")]
    actual, _ = _review_fields(events)
    assert actual == (
        f"Actual: ui #18, history #19 — written by: application; export: MISSING ({EVERY_WHY})"
        f"; copy: MISSING ({EVERY_WHY}); audit: 2 violations: missing_destination_write "
        "(export) at #15, missing_destination_write (copy) at #15")
    # The profile requires; it judges the answer exactly as the profile it is a twin of.
    plain = _seed003(("ui", "retry", RETRY), ("history", "retry", RETRY))
    assert [(d.status, d.reasons, d.answer) for d in
            (decide_release(events, "retry"), decide_release(plain, "retry"))] == [
        ("released", ("normal_native_ending", "clean_drain", "semantic_accepted"), RETRY)] * 2
    assert _violations(plain) == []  # without the profile, export and copy are not owed


def test_a_profile_requiring_every_destination_owes_history_after_ui_only_writes() -> None:
    events = _seed003(("ui", "retry", RETRY), profile=EVERY)
    assert [(v[0], v[2]) for v in _violations(events)] == [
        ("missing_destination_write", "history"), ("missing_destination_write", "export"),
        ("missing_destination_write", "copy")]
    every = _seed003(*((d, "retry", RETRY) for d in ("ui", "history", "export", "copy")),
                     profile=EVERY)
    assert _violations(every) == []
    actual, _ = _review_fields(every)
    assert actual == ("Actual: ui #18, history #19, export #20, copy #21 — written by: "
                      "application; audit: no violations")


def test_an_answer_written_twice_to_history_or_copy_is_named_and_the_review_says_so() -> None:
    events = _seed003(*((d, "retry", RETRY) for d in
                        ("ui", "history", "history", "export", "copy", "copy")), profile=EVERY)
    assert [(v[0], v[2], v[3]) for v in _violations(events)] == [
        ("duplicate_history_entry", "history", 20), ("repeated_destination_write", "copy", 23)]
    actual, _ = _review_fields(events)
    assert actual == (
        "Actual: ui #18, history #19, history #20, export #21, copy #22, copy #23 — written "
        "by: application; history: WRITTEN AGAIN at #20 (once expected); copy: WRITTEN AGAIN "
        "at #23 (once expected); audit: 2 violations: duplicate_history_entry (history) at "
        "#20, repeated_destination_write (copy) at #23")


def test_every_destination_profiles_are_twins_of_the_text_profiles_and_never_defaults() -> None:
    from dataclasses import replace

    from tracestore.projections.profiles import DEFAULT_PROFILE_FOR_API, PROFILES

    twins = {n: p for n, p in PROFILES.items() if n.endswith("-every-destination")}
    assert sorted(twins) == sorted(f"{n}-every-destination" for n in (
        "openai-responses-text", "bedrock-converse-text", "anthropic-messages-text",
        "openai-chat-text", "xai-text", "gemini-text", "ollama-text", "cohere-v2-text",
        "openai-realtime-text", "gemini-live-text"))
    for name, twin in twins.items():
        base = PROFILES[name.removesuffix("-every-destination")]
        assert twin.required_destinations == ("ui", "history", "export", "copy")
        assert replace(twin, name=base.name, required_destinations=()) == base
    assert not set(twins) & set(DEFAULT_PROFILE_FOR_API.values())
