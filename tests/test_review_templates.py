"""Review templates are data: found from a checkout, validated strictly, extended by editing JSON."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tracestore
from tracestore.errors import InputError, NotFound
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.review import fill_record, load_template, template_names, templates_dir
from tracestore.review.derivers import deriver_names
from tracestore.review.templates import parse_template

REPO = Path(__file__).resolve().parents[1]

TRACE_REVIEW_FIELDS = [
    "comparison_revision", "reader_revision", "attempt_correlation", "native_observation",
    "candidate", "local_ordering", "semantic_rule", "release_decision",
    "accepted_destinations", "authority", "remote_cancellation", "evidence_gap",
    "independent_reviewer",
]
APPLICATION_FIELDS = [
    "source_settings", "target_settings", "revisions", "output_profile", "trace_origin",
    "attempt_identity", "event_order", "candidate_assembly", "native_outcome",
    "local_eligibility", "semantic_acceptance", "transport_accounting",
    "expected_destinations", "actual_destinations", "tool_authority", "remote_cancellation",
    "integration_decision", "gaps_owner_review",
]


def raw(name: str) -> dict[str, Any]:
    return json.loads((REPO / "review_templates" / f"{name}.json").read_text(encoding="utf-8"))


def test_templates_are_found_in_the_checkout() -> None:
    assert templates_dir() == Path(tracestore.__file__).resolve().parents[1] / "review_templates"
    assert {"trace-review", "application-record"} <= set(template_names())


def test_trace_review_has_the_13_fields_of_the_filled_t7_record() -> None:
    t = load_template("trace-review")
    assert [f.name for f in t.fields] == TRACE_REVIEW_FIELDS
    assert [f.label for f in t.fields] == [
        "Comparison revision", "Reader/parser revision", "Attempt correlation",
        "Native observation", "Candidate", "Local ordering", "Semantic rule",
        "Release decision", "Accepted destinations", "Authority", "Remote cancellation",
        "Evidence gap", "Independent reviewer"]
    assert all(f.evidence for f in t.fields)


def test_application_record_has_the_18_fields_of_the_blank_record() -> None:
    t = load_template("application-record")
    assert [f.name for f in t.fields] == APPLICATION_FIELDS
    assert t.fields[4].label == ("Trace origin: synthetic projection, decoded capture or "
                                 "framed capture")
    assert [f.name for f in t.fields if f.reviewer_only] == ["integration_decision",
                                                             "gaps_owner_review"]


def test_every_evidence_name_is_a_registered_deriver_and_every_field_means_something() -> None:
    for name in template_names():
        for f in load_template(name).fields:
            assert f.evidence is None or f.evidence in deriver_names()
            assert f.meaning.strip() and f.label.strip()


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t["fields"][0].update(evidence="no_such_deriver"), "unknown evidence"),
    (lambda t: t["fields"].append(copy.deepcopy(t["fields"][0])), "duplicate field names"),
    (lambda t: t["fields"][0].update(reviewer_only=True), "reviewer_only"),
    (lambda t: t["fields"][0].update(name="Bad Name"), "must match"),
    (lambda t: t["fields"][0].update(label="  "), "must not be empty"),
    (lambda t: t["fields"][0].update(surprise=1), "Extra inputs"),
    (lambda t: t.update(fields=[]), "at least one field"),
])
def test_a_bad_template_is_refused_at_load_time(mutate: Any, message: str) -> None:
    data = raw("trace-review")
    mutate(data)
    with pytest.raises(InputError) as info:
        parse_template(data, name="trace-review")
    assert info.value.code == "invalid_template" and message in info.value.message


def test_a_template_must_carry_its_file_name() -> None:
    with pytest.raises(InputError) as info:
        parse_template(raw("trace-review"), name="other")
    assert info.value.code == "invalid_template"


@pytest.mark.parametrize("name", ["../trace-review", "trace-review.json", "/etc/passwd", ""])
def test_template_names_are_names_never_paths(name: str) -> None:
    with pytest.raises(InputError) as info:
        load_template(name)
    assert info.value.code == "invalid_template_name"


def test_unknown_template_and_unknown_field() -> None:
    with pytest.raises(NotFound) as info:
        load_template("no-such-template")
    assert info.value.code == "unknown_template" and "trace-review" in info.value.message
    with pytest.raises(InputError) as info:
        load_template("trace-review").field("nope")
    assert info.value.code == "unknown_field"


def test_adding_a_field_is_editing_a_template_not_python() -> None:
    data = raw("trace-review")
    data["fields"].append({"name": "transport", "label": "Transport", "meaning": "How it ended.",
                           "evidence": "transport_accounting", "reviewer_only": False})
    data["fields"].append({"name": "owner", "label": "Owner", "meaning": "Who owns the gap.",
                           "evidence": None, "reviewer_only": True})
    template = parse_template(data, name="trace-review")
    scenario = json.loads((REPO / "fixtures" / "seed003" / "t7.json").read_text("utf-8"))
    events = preview_replay(parse_scenario(scenario))[1]
    record = fill_record(template, events, "t7", version="9.9")
    by_name = {f.name: f for f in record.fields}
    assert by_name["transport"].value == (
        "Clean drain at #12; usage inputTokens=30, outputTokens=20, totalTokens=50 at #11 "
        "(one final record (metadata.usage))")
    assert by_name["transport"].evidence == (11, 12)
    assert (by_name["owner"].value, by_name["owner"].source) == ("UNKNOWN", "unknown")


def test_templates_are_found_in_an_installed_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed, there is no checkout: templates ship as ``tracestore/_review_templates``."""
    package = tmp_path / "site-packages" / "tracestore"
    (package / "_review_templates").mkdir(parents=True)
    for name in ("trace-review", "application-record"):
        (package / "_review_templates" / f"{name}.json").write_text(
            json.dumps(raw(name)), encoding="utf-8")
    monkeypatch.setattr(tracestore, "__file__", str(package / "__init__.py"))
    assert templates_dir() == package / "_review_templates"
    assert len(load_template("application-record").fields) == 18
    (package / "_review_templates" / "trace-review.json").unlink()
    (package / "_review_templates" / "application-record.json").unlink()
    (package / "_review_templates").rmdir()
    with pytest.raises(NotFound) as info:
        templates_dir()
    assert info.value.code == "templates_missing"
