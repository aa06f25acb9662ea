"""``tracestore judge``: a reviewer's semantic verdict on one attempt's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
    trace_of_attempt,
)
from tracestore.cli.completion import complete_attempt


@app.command()
@handles_errors
def judge(
    attempt: Annotated[str, typer.Argument(help="The attempt whose answer you judged.",
                                           autocompletion=complete_attempt)],
    verdict: Annotated[str, typer.Argument(help="accept or reject")],
    reviewer: Annotated[Optional[str], typer.Option(
        help="Who judged (with --key: the key's registered name, may be left out).")] = None,
    note: Annotated[Optional[str], typer.Option(help="Why (kept with the verdict).")] = None,
    key: Annotated[Optional[Path], typer.Option(
        "--key", help="Your Ed25519 reviewer key (PEM, private). Default: "
                      "$TRACESTORE_REVIEWER_KEY.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record a person's semantic verdict (a signed semantic.judged) for a task rule whose
    acceptance is decided by a reviewer; the release decision follows it."""
    from tracestore.cli.review_cmds import registry_in
    from tracestore.projections import decide_release
    from tracestore.review.judging import plan_judgement
    from tracestore.review.signing import signing_key

    signer = signing_key(key)
    with open_store(db, create=False) as store:
        trace_id = trace_of_attempt(store, attempt)

        def build(view: Any) -> tuple[list[Any], list[bytes]]:
            return [plan_judgement(view.read(trace_id=trace_id), attempt, verdict,
                                   reviewer=reviewer, note=note, registry=registry_in(view),
                                   key=signer)], []

        (position,) = store.append_with(build).positions
        decision = decide_release(store.read(trace_id=trace_id), attempt)
    if as_json:
        emit_json({"position": position, "attempt_id": attempt, "status": decision.status,
                   "reasons": list(decision.reasons)})
        return
    console.print(term_text(f"recorded the verdict at #{position}; {attempt} is now "
                            f"{decision.status} ({', '.join(decision.reasons)})"))
