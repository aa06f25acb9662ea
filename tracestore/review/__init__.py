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

__all__ = [
    "check_reviewer", "parse_assignment", "plan_review", "Derived", "ReviewContext",
    "build_context", "UNKNOWN",
    "Amendment", "Approval", "FieldValue", "ReviewRecord", "blank_record", "fill_record",
    "render_history_json", "render_history_markdown", "render_json", "render_markdown",
    "DEFAULT_TEMPLATE", "Template", "TemplateField", "load_template", "template_names",
    "templates_dir",
]
