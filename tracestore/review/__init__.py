"""Review records: seed 003's written records, filled from events and never guessed.

Layers inside the package (imports point down):

    templates   one JSON file per record kind (``review_templates/``), validated on load
    context     ReviewContext (events + projections + version) and the deriver registry
    derive_*    pure derivers: context in, ``Derived`` (value + positions) or None out
    record      a template + events → ReviewRecord (reviewer values, conflicts, UNKNOWN)
    amend       reviewer actions → events to append (independence enforced)
    escape      untrusted text made inert for Markdown and JSON
    render      Markdown and JSON

The CLI (``tracestore review``) is the only part that reads the store or writes files.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Lazy, like ``tracestore/__init__.py``: commands that only need ``review.escape`` (every
# ``--json`` output) must not pay for the templates, derivers and renderers at start-up.
_HOMES = {
    "check_reviewer": "amend", "parse_assignment": "amend", "plan_review": "amend",
    "Derived": "context", "ReviewContext": "context", "build_context": "context",
    "UNKNOWN": "record", "Amendment": "record", "Approval": "record", "FieldValue": "record",
    "ReviewRecord": "record", "blank_record": "record", "fill_record": "record",
    "render_history_json": "render", "render_history_markdown": "render",
    "render_json": "render", "render_markdown": "render",
    "DEFAULT_TEMPLATE": "templates", "Template": "templates", "TemplateField": "templates",
    "load_template": "templates", "template_names": "templates", "templates_dir": "templates",
}

if TYPE_CHECKING:
    from tracestore.review.amend import check_reviewer, parse_assignment, plan_review
    from tracestore.review.context import Derived, ReviewContext, build_context
    from tracestore.review.record import (
        UNKNOWN, Amendment, Approval, FieldValue, ReviewRecord, blank_record, fill_record,
    )
    from tracestore.review.render import (
        render_history_json, render_history_markdown, render_json, render_markdown,
    )
    from tracestore.review.templates import (
        DEFAULT_TEMPLATE, Template, TemplateField, load_template, template_names, templates_dir,
    )


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tracestore.review' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tracestore.review.{home}"), name)


__all__ = [
    "check_reviewer", "parse_assignment", "plan_review", "Derived", "ReviewContext",
    "build_context", "UNKNOWN",
    "Amendment", "Approval", "FieldValue", "ReviewRecord", "blank_record", "fill_record",
    "render_history_json", "render_history_markdown", "render_json", "render_markdown",
    "DEFAULT_TEMPLATE", "Template", "TemplateField", "load_template", "template_names",
    "templates_dir",
]
