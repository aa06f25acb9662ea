"""Output contracts as data: what a structured answer may claim (seeds 000 and 004).

A contract is a JSON document (``fixtures/contracts/*.json``).  It names the accepted
versions and, per version, a JSON Schema for the reply (exact fields, types, bounds);
the byte bound of one reply; the identifier pattern of citation ids; the link host
allowlist; which statuses need citations and which must have none; and the reason codes
this contract's failures carry (seed 000 says ``invalid_answer_json`` where seed 004 says
``invalid_json``).  The per-version validators are built from the document with the
maintained ``jsonschema`` library: nothing here checks a field by hand.

Loading refuses a document that is not a contract, a schema that is not valid JSON
Schema, and any regular expression (identifier pattern, schema ``pattern``) that could
backtrack exponentially on hostile model text (``unsafe_pattern``).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracestore.errors import InputError

#: Failure kinds a contract judge reports, and the code each carries unless the contract
#: renames it in ``codes``.
DEFAULT_CODES: dict[str, str] = {
    "invalid_json": "invalid_json",
    "invalid_schema": "invalid_schema",
    "unknown_version": "unknown_version",
    "too_large": "too_large",
    "unknown_citation": "untrusted_value",
    "untrusted_link": "untrusted_value",
    "status_citation": "status_citation_mismatch",
}


class ContractVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int | None
    "The ``version_field`` value this schema reads; None for an unversioned contract."
    json_schema: dict[str, Any] = Field(alias="schema")
    "JSON Schema (draft 2020-12) of the whole reply object, version field included."


class ContractDoc(BaseModel):
    """The contract file's shape (validated strictly: unknown keys are refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    contract: str = Field(min_length=1, max_length=200)
    "The contract's name, shown in decisions and reviews."
    description: str | None = None
    version_field: str | None = None
    "The field naming the schema version (``schema_version``); None: one unversioned schema."
    versions: tuple[ContractVersion, ...] = Field(min_length=1)
    max_reply_bytes: int = Field(gt=0, le=16 * 1024 * 1024)
    "The reply's UTF-8 size limit, checked before parsing: reject, never cut."
    max_depth: int = Field(default=32, gt=0, le=512)
    "JSON nesting bound, checked before parsing."
    answer_field: str = "answer"
    status_field: str | None = "status"
    citation_field: str | None = None
    "The list of cited context ids; each must belong to the context bound to the request."
    link_field: str | None = None
    "The list of links; each must pass the URL rule against ``link_hosts``."
    identifier_pattern: str | None = None
    "Pattern every citation id must match (inserted into each version's schema)."
    link_hosts: tuple[str, ...] = ()
    citations_required: tuple[str, ...] = ()
    "Statuses that need at least one citation (``answered``)."
    citations_forbidden: tuple[str, ...] = ()
    "Statuses that must carry no citation (``not_in_docs``)."
    codes: dict[str, str] = {}
    "Renamed failure codes (see ``DEFAULT_CODES`` for the kinds)."
    example: dict[str, Any] | None = None
    "A known-good reply: it must validate, and regression ``patch`` cases patch it."


@dataclass(frozen=True)
class Contract:
    """A loaded contract: the document plus its compiled validators."""

    doc: ContractDoc
    source: dict[str, Any]
    "The document exactly as given (what the ``contract.bound`` event stores)."
    sha256: str
    validators: dict[int | None, Any]

    @property
    def name(self) -> str:
        return self.doc.contract

    def code(self, kind: str) -> str:
        return self.doc.codes.get(kind, DEFAULT_CODES[kind])

    def internal_answer(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Seed 004's internal ``Answer`` for an accepted reply: every version becomes one
        model — the reply without its version field, and each property of the newest
        version's schema that declares a ``default`` (``links: []``) filled when absent."""
        field = self.doc.version_field
        answer = {k: v for k, v in reply.items() if k != field}
        newest = max(self.doc.versions, key=lambda v: -1 if v.version is None else v.version)
        properties = newest.json_schema.get("properties")
        for name, schema in (properties.items() if isinstance(properties, dict) else ()):
            if name != field and isinstance(schema, dict) and "default" in schema \
                    and name not in answer:
                answer[name] = copy.deepcopy(schema["default"])
        return answer


def canonical_sha256(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _schema_patterns(node: Any) -> list[str]:
    """Every ``pattern`` keyword in a schema (they run over untrusted text too)."""
    found: list[str] = []
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            found.append(node["pattern"])
        for value in node.values():
            found += _schema_patterns(value)
    elif isinstance(node, list):
        for value in node:
            found += _schema_patterns(value)
    return found


def _built_schema(doc: ContractDoc, version: ContractVersion) -> dict[str, Any]:
    """The version's schema with the contract-wide identifier pattern inserted."""
    schema = copy.deepcopy(version.json_schema)
    if doc.identifier_pattern and doc.citation_field:
        field = schema.get("properties", {}).get(doc.citation_field)
        if isinstance(field, dict):
            items = field.setdefault("items", {})
            if isinstance(items, dict):
                items["pattern"] = doc.identifier_pattern
    return schema


def load_contract(source: Any) -> Contract:
    """Validate a contract document (already parsed JSON) and build its validators.

    Raises ``InputError`` (``invalid_contract``, ``invalid_pattern``, ``unsafe_pattern``)
    with one sentence; nothing is half-built.
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from tracestore.text.patterns import check_pattern

    if not isinstance(source, dict):
        raise InputError("a contract must be a JSON object", code="invalid_contract")
    try:
        doc = ContractDoc.model_validate(source)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(top)"
        raise InputError(f"the contract is not valid: {where}: {first.get('msg')}",
                         code="invalid_contract") from exc
    unknown = sorted(set(doc.codes) - set(DEFAULT_CODES))
    if unknown:
        raise InputError(f"the contract renames unknown failure kinds: {', '.join(unknown)}",
                         code="invalid_contract")
    versions = [v.version for v in doc.versions]
    if len(set(versions)) != len(versions):
        raise InputError("the contract lists a version twice", code="invalid_contract")
    if (doc.version_field is None) != (versions == [None]):
        raise InputError("a contract without version_field has exactly one version, null; "
                         "a versioned one numbers every version", code="invalid_contract")
    if doc.identifier_pattern is not None:
        check_pattern(doc.identifier_pattern, "identifier pattern")
    validators: dict[int | None, Any] = {}
    for version in doc.versions:
        schema = _built_schema(doc, version)
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise InputError(f"version {version.version}: the schema is not valid JSON "
                             f"Schema: {exc.message}", code="invalid_contract") from exc
        for pattern in _schema_patterns(schema):
            check_pattern(pattern, "schema pattern")
        validators[version.version] = Draft202012Validator(schema)
    contract = Contract(doc, source, canonical_sha256(source), validators)
    if doc.example is not None:
        from tracestore.contracts.judge import judge_reply

        verdict = judge_reply(contract, json.dumps(doc.example, ensure_ascii=False))
        if not verdict.ok:
            raise InputError(f"the contract's example reply fails its own contract "
                             f"({verdict.code})", code="invalid_contract")
    return contract


_CACHE: dict[str, Contract] = {}


def cached_contract(sha256: str, source: Any) -> Contract:
    """A stored contract's validators, built once per process (projections run often)."""
    contract = _CACHE.get(sha256)
    if contract is None:
        if len(_CACHE) > 64:
            _CACHE.clear()
        contract = _CACHE[sha256] = load_contract(source)
    return contract


def parse_contract_bytes(data: bytes, name: str = "contract") -> Contract:
    """A contract from file bytes (strict JSON: duplicate keys and NaN refused)."""
    from tracestore.providers.strictjson import StrictJSONError, strict_parse

    try:
        source = strict_parse(data.decode("utf-8"), max_depth=64)
    except (UnicodeDecodeError, StrictJSONError) as exc:
        raise InputError(f"{name} is not strict JSON: {exc}", code="invalid_contract") from exc
    return load_contract(source)
