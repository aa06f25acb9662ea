"""Review commands: ``review`` (fill, amend, approve, history, blank) and ``templates``.

The shell does the I/O and nothing clever: it loads the attempt's trace from the store,
hands the events to the pure ``tracestore.review`` functions, appends what they plan (in
one transaction, with the independence check run inside it), and writes the rendering to
the terminal through ``safe_text`` or atomically to ``--out``.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

import tracestore
from tracestore.cli.files import write_atomically  # noqa: F401 - re-exported
from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, err_console, handles_errors, open_store,
    safe_text, term_text, trace_of_attempt,
)
from tracestore.cli.completion import complete_attempt
from tracestore.errors import InputError

# The review package (pydantic) and the store (SQLAlchemy) are imported inside the commands,
# so `tracestore --help` does not pay for them.
if TYPE_CHECKING:
    from tracestore.review import ReviewRecord
    from tracestore.review.templates import Template
    from tracestore.store.log import EventStore, WriteView

#: The same name as ``tracestore.review.templates.DEFAULT_TEMPLATE`` (a test keeps them
#: equal); repeated here because an option default is needed before the command runs.
DEFAULT_TEMPLATE = "trace-review"


class Format(str, enum.Enum):
    md = "md"
    json = "json"


def trace_of(store: EventStore, attempt_id: str) -> str:
    """The trace an attempt belongs to (``attempt_not_found`` when there is none)."""
    return trace_of_attempt(store, attempt_id, code="attempt_not_found")


def amend(store: EventStore, template: Template, attempt_id: str, trace_id: str, *,
          sets: list[tuple[str, str]], approve: bool, reviewer: Optional[str],
          evidence: list[int], expect_digest: Optional[str] = None,
          override_reason: Optional[str] = None, key: Any = None) -> Sequence[int]:
    """Append the reviewer's action; the refusal rules see the log as of this transaction."""
    from tracestore.review import plan_review

    def build(view: WriteView) -> tuple[list[Any], list[bytes]]:
        events = view.read(trace_id=trace_id)
        return plan_review(template, events, attempt_id, sets=sets, approve=approve,
                           reviewer=reviewer, evidence=evidence, expect_digest=expect_digest,
                           override_reason=override_reason, registry=registry_in(view),
                           key=key), []

    return store.append_with(build).positions


def registry_in(view: Any) -> Any:
    """The reviewer keys and the unsigned-reviews setting as this transaction sees them."""
    from tracestore.review.signing import REVIEWERS_STREAM, SETTINGS_STREAM, registry_of

    return registry_of([*view.read(stream=REVIEWERS_STREAM),
                        *view.read(stream=SETTINGS_STREAM)])


KeyOption = Annotated[Optional[Path], typer.Option(
    "--key", help="Your Ed25519 reviewer key (PEM, private) to sign with. Default: "
                  "$TRACESTORE_REVIEWER_KEY (PEM text or a file path). Without one the "
                  "review is unsigned, which a store with registered keys refuses.")]


def render(record: ReviewRecord, fmt: Format, history: bool) -> str:
    from tracestore.review import (
        render_history_json, render_history_markdown, render_json, render_markdown,
    )

    if fmt is Format.json:
        return render_history_json(record) if history else render_json(record)
    return render_history_markdown(record) if history else render_markdown(record)


def output(text: str, fmt: Format, out: Optional[Path]) -> None:
    if out is not None:
        write_atomically(out, text)
        err_console.print(term_text(f"wrote {out}"))
    elif fmt is Format.json:
        sys.stdout.write(text)  # json_text already escaped every control character
    else:
        # Raw Markdown, never through Rich markup; controls shown as \xNN escapes.
        sys.stdout.write(safe_text(text, keep_newlines=True))


def _check_options(attempt: Optional[str], blank: bool, acting: bool, history: bool) -> None:
    if blank and (attempt is not None or acting or history):
        raise InputError("--blank prints the empty record: it takes no ATTEMPT, --set, "
                         "--approve or --history", code="blank_takes_no_attempt")
    if not blank and attempt is None:
        raise InputError("name an ATTEMPT to review (or pass --blank)", code="attempt_required")


@app.command()
@handles_errors
def review(
    attempt: Annotated[Optional[str], typer.Argument(
        help="Attempt id to review.", autocompletion=complete_attempt)] = None,
    template: Annotated[str, typer.Option(help="Template name (see `tracestore templates`).")]
    = DEFAULT_TEMPLATE,
    fmt: Annotated[Format, typer.Option("--format", help="md for people, json for scripts.")]
    = Format.md,
    out: Annotated[Optional[Path], typer.Option(help="Write the record to FILE (atomically) "
                                                "instead of printing it.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option(
        "--set", help="Append a reviewer value for a field (repeatable). Needs --reviewer.")]
    = None,
    reviewer: Annotated[Optional[str], typer.Option(
        help="Who sets or approves (with --key: the key's registered name, may be left out).")]
    = None,
    key: KeyOption = None,
    evidence: Annotated[Optional[list[int]], typer.Option(
        help="An event position the --set values rest on (repeatable).")] = None,
    approve: Annotated[bool, typer.Option(
        help="Approve the record as an independent reviewer. Needs --reviewer.")] = False,
    expect_digest: Annotated[Optional[str], typer.Option(
        metavar="HEX",
        help="The record digest you read (JSON digest, or the Review state line): the "
             "action is refused with record_changed if the record changed since.")] = None,
    override_reason: Annotated[Optional[str], typer.Option(
        metavar="TEXT", help="Approve although a CONFLICT stands, saying why (kept in the record).")] = None,
    history: Annotated[bool, typer.Option(help="Show every value each field has had.")] = False,
    blank: Annotated[bool, typer.Option(help="Print the empty record (every field UNKNOWN).")]
    = False,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the record as one JSON object (same as --format json): "
                       "template, attempt, every field with its value, source and evidence "
                       "positions, and the names of the UNKNOWN fields.")] = False,
) -> None:
    """Fill a review record from an attempt's events; amend or approve it by appending."""
    from tracestore.review import blank_record, fill_record, load_template

    fmt = Format.json if as_json else fmt
    sets: list[tuple[str, str]] = []
    if set_:  # amending: the amend module (and signing) load only for a write
        from tracestore.review import parse_assignment

        sets = [parse_assignment(s) for s in set_]
    _check_options(attempt, blank, bool(sets) or approve, history)
    signer = None
    if sets or approve:
        from tracestore.review import check_reviewer
        from tracestore.review.signing import signing_key

        signer = signing_key(key)
        if signer is None or reviewer is not None:
            reviewer = check_reviewer(reviewer)
    spec = load_template(template)
    version = tracestore.__version__
    if blank:
        output(render(blank_record(spec, version=version), fmt, False), fmt, out)
        return
    assert attempt is not None
    with open_store(db, create=False) as store:
        trace_id = trace_of(store, attempt)
        if sets or approve:
            written = amend(store, spec, attempt, trace_id, sets=sets, approve=approve,
                            reviewer=reviewer, evidence=evidence or [],
                            expect_digest=expect_digest, override_reason=override_reason,
                            key=signer)
            err_console.print(term_text(
                f"recorded {len(written)} review event(s) at "
                f"{', '.join(f'#{p}' for p in written)}"))
        events = store.read(trace_id=trace_id)
    record = fill_record(spec, events, attempt, version=version)
    output(render(record, fmt, history), fmt, out)


@app.command()
@handles_errors
def templates(as_json: JsonOption = False) -> None:
    """List review templates, their fields and which deriver supplies each field."""
    from rich.table import Table

    from tracestore.review.derivers import describe
    from tracestore.review.templates import load_all

    loaded = load_all()
    if as_json:
        emit_json({"templates": [t.to_dict() for t in loaded]})
        return
    from tracestore.cli.tables import token_column

    for spec in loaded:
        table = Table(title=f"{spec.name}: {spec.title} ({len(spec.fields)} fields)")
        names = [f.name for f in spec.fields]
        token_column(table, "field", names)
        # Fixed widths, so labels wrap between words and no word is cut: the label column
        # is at least as wide as its longest word, the evidence column takes the rest.
        field_w = max(map(len, names))
        word_w = max(len(w) for f in spec.fields for w in f.label.split())
        label_w = max(word_w, min(max(len(f.label) for f in spec.fields),
                                  (console.width - field_w - 10) // 2))
        table.add_column("label", width=label_w)
        table.add_column("evidence", overflow="fold",
                         width=max(16, console.width - field_w - label_w - 10))
        for f in spec.fields:
            source = (f"{f.evidence}: {describe(f.evidence)}" if f.evidence
                      else "reviewer only")
            table.add_row(term_text(f.name), term_text(f.label), term_text(source))
        console.print(table)
