"""Request binding (seed 000): what one request was, so frames and citations can be tied to it.

A binding is a JSON object holding the request's messages, request hash, schema, corpus
identity and — what the judges read — ``selected_context``: the passages supplied to THIS
request, each ``{"source_id", "chunk_id", "text", "url"}`` (only ``source_id`` is
required; seed 004's endpoint binds ids alone).  Its digest is seed 000's: sha256 of the
canonical JSON (sorted keys, compact separators, UTF-8), the value every application
frame carries as ``binding_sha256``.

Citations are resolved from the bound context (chunk id and URL of the passage), never
from a URL the model wrote.

Before use a binding is checked for internal consistency, as seed 000's ``load_binding``
checks its recording (each check applies when the binding carries the fields it reads):
``request_sha256`` is the digest of ``messages`` (``recorded_request_mismatch``); the
context the last message supplied is the selected context's ids and texts
(``recorded_context_mismatch``); a selected passage comes from the bound corpus — its
``chunk_id`` is one of ``corpus_identity.index_descriptor.chunk_ids``, and a chunk id of
seed 000's form ``<source_id>:<16 hex>`` is the digest of the passage's text and URL
(``binding_corpus_mismatch``), so a URL edited into the binding never resolves a citation.
"""

from __future__ import annotations

import json
import re
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


_SEED_CHUNK_ID = re.compile(r"(?P<source>.+):(?P<digest>[0-9a-f]{16})")


def inconsistency(binding: Any) -> tuple[str, str] | None:
    """``(code, message)`` of the first internal inconsistency of a binding, else None
    (shape problems are ``context_of``'s)."""
    if not isinstance(binding, Mapping):
        return None
    messages, claimed = binding.get("messages"), binding.get("request_sha256")
    if messages is not None and claimed is not None and binding_digest(messages) != claimed:
        return ("recorded_request_mismatch",
                "the binding's request_sha256 is not the digest of its messages")
    rows = binding.get("selected_context")
    rows = [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []
    supplied = _supplied_context(messages)
    if supplied is not None and all(isinstance(r.get("text"), str) for r in rows) and \
            supplied != [{"id": r.get("source_id"), "text": r.get("text")} for r in rows]:
        return ("recorded_context_mismatch",
                "the context the request supplied is not the binding's selected context")
    identity = binding.get("corpus_identity")
    descriptor = identity.get("index_descriptor") if isinstance(identity, Mapping) else None
    corpus = descriptor.get("chunk_ids") if isinstance(descriptor, Mapping) else None
    for index, row in enumerate(rows):
        chunk = row.get("chunk_id")
        if not isinstance(chunk, str):
            continue
        if isinstance(corpus, list) and chunk not in corpus:
            return ("binding_corpus_mismatch",
                    f"selected_context[{index}].chunk_id is not in the bound corpus")
        seed_form = _SEED_CHUNK_ID.fullmatch(chunk)
        if seed_form and seed_form["source"] == row.get("source_id") and isinstance(
                row.get("text"), str) and isinstance(row.get("url"), str) and binding_digest(
                {"text": row["text"], "url": row["url"]})[:16] != seed_form["digest"]:
            return ("binding_corpus_mismatch",
                    f"selected_context[{index}]'s text or URL is not its corpus chunk's")
    return None


def _supplied_context(messages: Any) -> Any:
    """The ``context`` list the request's last message supplied (seed 000's RAG request:
    ``[role, json-text]``), or None when the request is of another form."""
    if not isinstance(messages, list) or not messages:
        return None
    last = messages[-1]
    text = last[1] if isinstance(last, list) and len(last) == 2 else None
    if not isinstance(text, str):
        return None
    try:
        supplied = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return supplied.get("context") if isinstance(supplied, dict) else None


def context_of(binding: Any) -> BoundContext:
    """Check a binding's shape and consistency and index its selected context
    (``invalid_binding`` or the inconsistency's code)."""
    problem = inconsistency(binding)
    if problem is not None:
        raise InputError(f"inconsistent request binding: {problem[1]}", code=problem[0])
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
        binding: dict[str, Any] = strict_parse(data.decode("utf-8"), max_depth=64)
    except (UnicodeDecodeError, StrictJSONError) as exc:
        raise InputError(f"{name} is not strict JSON: {exc}", code="invalid_binding") from exc
    context_of(binding)
    return binding
