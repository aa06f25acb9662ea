"""Request binding (seed 000): what one request was, so frames and citations can be tied to it.

A binding is a JSON object holding the request's messages, request hash, schema, corpus
identity and — what the judges read — ``selected_context``: the passages supplied to THIS
request, each ``{"source_id", "chunk_id", "text", "url"}`` (only ``source_id`` is
required; seed 004's endpoint binds ids alone).  Its digest is seed 000's: sha256 of the
canonical JSON (sorted keys, compact separators, UTF-8), the value every application
frame carries as ``binding_sha256``.

Citations are resolved from the bound context (chunk id and URL of the passage), never
from a URL the model wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracestore.errors import InputError
from tracestore.providers.app_frames import binding_digest

#: A binding is request metadata, not a corpus: refuse anything larger before parsing.
MAX_BINDING_BYTES = 1024 * 1024
MAX_CONTEXT_PASSAGES = 1000


@dataclass(frozen=True, slots=True)
class Citation:
    source_id: str
    chunk_id: str | None
    url: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"source_id": self.source_id, "chunk_id": self.chunk_id, "url": self.url}


@dataclass(frozen=True)
class BoundContext:
    """The passages bound to one request, by source id."""

    digest: str
    passages: Mapping[str, Citation]

    def resolve(self, source_id: str) -> Citation | None:
        return self.passages.get(source_id)


def _opt_str(row: Mapping[str, Any], key: str, index: int) -> str | None:
    value = row.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(f"selected_context[{index}].{key} must be text", code="invalid_binding")
    return value


def context_of(binding: Any) -> BoundContext:
    """Check a binding's shape and index its selected context (``invalid_binding``)."""
    if not isinstance(binding, Mapping):
        raise InputError("a request binding must be a JSON object", code="invalid_binding")
    rows = binding.get("selected_context")
    if not isinstance(rows, list):
        raise InputError("the request binding has no selected_context list",
                         code="invalid_binding")
    if len(rows) > MAX_CONTEXT_PASSAGES:
        raise InputError(f"the request binding selects {len(rows)} passages; the limit is "
                         f"{MAX_CONTEXT_PASSAGES}", code="invalid_binding")
    passages: dict[str, Citation] = {}
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping) or not isinstance(row.get("source_id"), str) \
                or not row["source_id"]:
            raise InputError(f"selected_context[{index}] needs a non-empty source_id",
                             code="invalid_binding")
        if row["source_id"] in passages:
            raise InputError(f"selected_context[{index}] repeats source_id "
                             f"{row['source_id']!r}", code="invalid_binding")
        passages[row["source_id"]] = Citation(row["source_id"], _opt_str(row, "chunk_id", index),
                                              _opt_str(row, "url", index))
    return BoundContext(binding_digest(binding), passages)


def parse_binding_bytes(data: bytes, name: str = "binding") -> dict[str, Any]:
    """A binding from file bytes: strict JSON, bounded, shape-checked."""
    from tracestore.providers.strictjson import StrictJSONError, strict_parse

    if len(data) > MAX_BINDING_BYTES:
        raise InputError(f"{name} is {len(data)} bytes; a binding may have "
                         f"{MAX_BINDING_BYTES}", code="invalid_binding")
    try:
        binding = strict_parse(data.decode("utf-8"), max_depth=64)
    except (UnicodeDecodeError, StrictJSONError) as exc:
        raise InputError(f"{name} is not strict JSON: {exc}", code="invalid_binding") from exc
    context_of(binding)
    return binding
