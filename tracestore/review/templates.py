"""Review templates: one JSON file per record kind, found in a checkout or an install.

Templates are data so that adding or rewording a field is an edit to a JSON file, not to
Python: each field names what it means and which deriver supplies its evidence (or that
only a reviewer can supply it).  Loading validates every file strictly — an unknown
deriver or a duplicate field name is an error at load time, not a silently blank field.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

import tracestore
from tracestore.errors import InputError, NotFound
from tracestore.review.derivers import deriver_names, get_deriver

#: A template name is a file stem: no paths, no dots, nothing a shell could misread.
TEMPLATE_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
#: A field name is how reviewers address a field in ``--set FIELD=VALUE``.
FIELD_NAME: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
DEFAULT_TEMPLATE: Final = "trace-review"
#: ``frame.received`` or ``evidence.attached:cancellation_receipt``.
EVIDENCE_KIND: Final = re.compile(r"^[a-z]+(?:\.[a-z_]+)+(?::[a-z0-9_]{1,64})?$")


class TemplateField(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    "Stable identifier (``release_decision``), used by ``--set`` and in JSON."
    label: str
    "What people read in the Markdown table."
    meaning: str
    "What a filled value must say, and what it must not be mistaken for."
    evidence: str | None = None
    "The deriver that supplies evidence from events; None when no projection does."
    reviewer_only: bool = False
    "Only a reviewer can supply this field (it stays UNKNOWN until one does)."
    pass_evidence: tuple[str, ...] | None = None
    """Event kinds that can support a PASS-like value (``TYPE`` or ``evidence.attached:KIND``);
    citing another kind is ``evidence_kind_mismatch``.  None: any event of the trace."""

    @field_validator("pass_evidence")
    @classmethod
    def _kinds(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and (not value or not all(EVIDENCE_KIND.match(k) for k in value)):
            raise ValueError("pass_evidence lists event types (a.b) or "
                             "evidence.attached:KIND entries")
        return value

    def accepts(self, event_type: str, kind: str | None) -> bool:
        """Whether an event of this type (and evidence kind) may support a PASS value."""
        if self.pass_evidence is None:
            return True
        return event_type in self.pass_evidence or (
            kind is not None and f"{event_type}:{kind}" in self.pass_evidence)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not FIELD_NAME.match(value):
            raise ValueError(f"field name {value!r} must match {FIELD_NAME.pattern}")
        return value

    @field_validator("label", "meaning")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _evidence(self) -> TemplateField:
        if self.reviewer_only and self.evidence is not None:
            raise ValueError(f"field {self.name!r} is reviewer_only, so it names no evidence")
        if self.evidence is not None and get_deriver(self.evidence) is None:
            raise ValueError(f"field {self.name!r} names unknown evidence {self.evidence!r}; "
                             f"known: {', '.join(deriver_names())}")
        return self


class Template(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    title: str
    description: str
    fields: tuple[TemplateField, ...]

    @model_validator(mode="after")
    def _fields(self) -> Template:
        if not self.fields:
            raise ValueError("a template needs at least one field")
        names = [f.name for f in self.fields]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate field names: {', '.join(duplicates)}")
        return self

    def field(self, name: str) -> TemplateField:
        """The named field; ``InputError(unknown_field)`` lists the ones that exist.

        A field name is part of what the user typed (``--set FIELD=…``): a wrong one is bad
        input (exit 2), not a missing record."""
        for f in self.fields:
            if f.name == name:
                return f
        raise InputError(f"template {self.name!r} has no field {name!r}; fields: "
                         f"{', '.join(f.name for f in self.fields)}", code="unknown_field",
                         template=self.name, field=name)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def templates_dir() -> Path:
    """Where templates live: the checkout's ``review_templates/``, else the installed copy."""
    package = Path(tracestore.__file__).resolve().parent
    for candidate in (package.parent / "review_templates", package / "_review_templates"):
        if candidate.is_dir():
            return candidate
    raise NotFound("no review_templates directory found (checked the checkout and the "
                   "installed package)", code="templates_missing")


def template_names() -> list[str]:
    return sorted(p.stem for p in templates_dir().glob("*.json") if TEMPLATE_NAME.match(p.stem))


def load_template(name: str = DEFAULT_TEMPLATE) -> Template:
    """Read and validate one template by name (never by path)."""
    if not TEMPLATE_NAME.match(name):
        raise InputError(f"template name {name!r} must match {TEMPLATE_NAME.pattern}",
                         code="invalid_template_name")
    path = templates_dir() / f"{name}.json"
    if not path.is_file():
        raise NotFound(f"no template {name!r}; templates: {', '.join(template_names())}",
                       code="unknown_template", template=name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError: JSON syntax and 5,000-digit numbers; RecursionError: 100k-deep nesting
        # (hostile input), both plain invalid templates.
        raise InputError(f"template {name!r} is not valid JSON: {str(exc)[:200]}",
                         code="invalid_template", template=name) from None
    return parse_template(data, name=name)


def parse_template(data: Any, *, name: str) -> Template:
    """Validate decoded template JSON; its ``name`` must equal the file stem."""
    try:
        template = Template.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(f"template {name!r}: {where}: {first.get('msg')}",
                         code="invalid_template", template=name) from exc
    if template.name != name:
        raise InputError(f"template file {name!r} declares name {template.name!r}",
                         code="invalid_template", template=name)
    return template


def load_all() -> list[Template]:
    return [load_template(n) for n in template_names()]
