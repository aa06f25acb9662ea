"""Seed 001's checks on one decision and one answer, as pure functions.

``validate_decision`` is the schema check every model reply passes before admission (same
codes, same order as seed 001's), ``normalized_terms`` is a search's identity for
``duplicate_query``, and ``check_citations`` is the citation contract an answer must pass.
The admission replay (``tracestore.agent.admission``) calls them; so do tests and review.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from tracestore.agent import codes as C

SCHEMA_FIELDS = frozenset({"action", "assessment", "query", "source_id", "answer", "citations"})
ACTIONS = ("search", "read", "answer", "stop")
MAX_FIELD_CHARS = 2000
MAX_CITATIONS = 6


def validate_decision(value: Any) -> str | None:
    """Seed 001's ``validate_decision``: None when valid, else its code (same order of checks)."""
    if not isinstance(value, Mapping) or set(value) != SCHEMA_FIELDS:
        return C.INVALID_DECISION
    if value["action"] not in ACTIONS:
        return C.UNKNOWN_ACTION
    for key in ("assessment", "query", "source_id", "answer"):
        if not isinstance(value[key], str) or len(value[key]) > MAX_FIELD_CHARS:
            return C.INVALID_DECISION
    citations = value["citations"]
    if (not value["assessment"].strip() or not isinstance(citations, list)
            or len(citations) > MAX_CITATIONS):
        return C.INVALID_DECISION
    for citation in citations:
        if not isinstance(citation, Mapping) or set(citation) != {"source_id", "quote"}:
            return C.INVALID_CITATION
        if any(not isinstance(v, str) or not v.strip() or len(v) > MAX_FIELD_CHARS
               for v in citation.values()):
            return C.INVALID_CITATION
    action = value["action"]
    if ((action != "search" and value["query"]) or (action != "read" and value["source_id"])
            or (action != "answer" and (value["answer"] or citations))):
        return C.UNEXPECTED_ACTION_FIELDS
    if action == "search" and not value["query"].strip():
        return C.INVALID_QUERY
    if action == "read" and not value["source_id"]:
        return C.INVALID_SOURCE
    if action == "answer" and (not value["answer"].strip() or not citations):
        return C.MISSING_ANSWER_EVIDENCE
    return None


def normalized_terms(query: str) -> tuple[str, ...]:
    """A search's identity for ``duplicate_query``: its lower-case [a-z0-9]+ words as a set."""
    return tuple(sorted(set(re.findall(r"[a-z0-9]+", query.lower()))))


def text_matches_hash(result: Mapping[str, Any]) -> bool:
    text, digest = result.get("text"), result.get("text_sha256")
    return (isinstance(text, str) and isinstance(digest, str)
            and hashlib.sha256(text.encode("utf-8")).hexdigest() == digest)


def check_citations(decision: Mapping[str, Any], passages: Mapping[str, Mapping[str, Any]]
                    ) -> tuple[str | None, tuple[dict[str, Any], ...]]:
    """Every cited id was read, every quote occurs in that read text, the text matches its
    hash; URLs come from the read record, never from the model."""
    for citation in decision["citations"]:
        row = passages.get(citation["source_id"])
        if row is None or citation["quote"] not in row["text"] or not text_matches_hash(row):
            return C.UNREAD_OR_CHANGED_CITATION, ()
    return None, tuple({**c, "url": passages[c["source_id"]].get("url")}
                       for c in decision["citations"])
