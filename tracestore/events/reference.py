"""The event vocabulary as a reference page (``docs/reference/events.md``), made from the
models' own source so the page cannot drift from the code: every kind in ``EVENT_TYPES``
order, its docstring, its schema version, and each field with its type, its default and
the docstring written under it.  ``python -m tracestore.events`` prints it."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

HEADER = """# Event kinds

Every fact tracestore records is one immutable event of one of these kinds, stored as
canonical JSON in `ts_events.payload` with its `type` and `schema_version`. This page is
generated from the models (`python -m tracestore.events`); a test keeps it equal to them.
Every event also has an `id` (drawn when it is made) and, where the kind has them,
`observed_at` (when the application saw it) and the stream it belongs to
(`trace:<id>`, `attempt:<id>`, `review:<template>:<attempt>`, `reviewers`, `settings`).
"""


@dataclass(frozen=True)
class FieldDoc:
    name: str
    type: str
    default: str | None
    doc: str


def _fields(cls: type) -> list[FieldDoc]:
    """Each annotated attribute of ``cls``'s own body with the string written under it."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out: list[FieldDoc] = []
    for index, node in enumerate(body):
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        if node.target.id == "type":
            continue
        following = body[index + 1] if index + 1 < len(body) else None
        doc = ""
        if (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            doc = " ".join(inspect.cleandoc(following.value.value).split())
        default = ast.unparse(node.value) if node.value is not None else None
        out.append(FieldDoc(node.target.id, ast.unparse(node.annotation), default, doc))
    return out


def _cell(text: str) -> str:
    return _md(text).replace("|", "\\|").replace("\n", " ")


def _md(text: str) -> str:
    """Docstrings quote code reStructuredText's way (double backticks); pages, Markdown's."""
    return text.replace("``", "`")


def markdown() -> str:
    from tracestore.events import EVENT_TYPES, MODELS, SCHEMA_VERSIONS

    parts = [HEADER]
    for name in EVENT_TYPES:
        model = MODELS[name]
        doc = " ".join(inspect.cleandoc(model.__doc__ or "").split())
        parts.append(f"\n## `{name}`\n\n{_md(doc)}\n\nSchema version "
                     f"{SCHEMA_VERSIONS[name]}.\n")
        fields = _fields(model)
        if not fields:
            continue
        parts.append("\n| field | type | default | meaning |\n|---|---|---|---|\n")
        for f in fields:
            default = "required" if f.default is None else \
                "`" + f.default.replace("|", "\\|") + "`"
            kind = f.type.replace("|", "\\|")
            parts.append(f"| `{f.name}` | `{kind}` | {default} | {_cell(f.doc)} |\n")
    return "".join(parts)


__all__ = ["markdown"]
