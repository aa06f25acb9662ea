"""Event payloads in and out: schema versions, upcasting, validation, canonical JSON.

Validation goes through the model of the payload's own type (``MODELS``), so reading a
few event types builds only their validators; the discriminated union over every kind is
built only when a payload's type is unknown or it does not validate (to explain why).
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from tracestore.errors import InputError
from tracestore.events.models import EVENT_TYPES, MODELS

SCHEMA_VERSIONS: dict[str, int] = {name: 1 for name in EVENT_TYPES}
SCHEMA_VERSIONS["model.decision"] = 2
SCHEMA_VERSIONS["release.decided"] = 2

# (type, from_version) -> function upgrading a payload dict one version.  Empty at v1; the
# hook exists from day one so that a shape change never strands stored rows.
UPCASTERS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    # v2 added the decision's index and whether its verdict was implied by a run result.
    ("model.decision", 1): lambda p: {**p, "index": None, "implied": False},
    # v2 names the task rule version a decision used; v1 decisions did not record it.
    ("release.decided", 1): lambda payload: {**payload, "rule_version": None},
}


def upcast(type_name: str, schema_version: int, payload: dict[str, Any]) -> dict[str, Any]:
    """Upgrade a stored payload to the current schema version of its type."""
    current = SCHEMA_VERSIONS.get(type_name, schema_version)
    while schema_version < current:
        payload = UPCASTERS[(type_name, schema_version)](payload)
        schema_version += 1
    return payload


@functools.cache
def _event_adapter() -> TypeAdapter[Any]:
    """The discriminated union over every kind (built on first use: it builds them all)."""
    from tracestore.events.models import Event

    return TypeAdapter(Event)


def parse_event_json(payload: str | bytes, type_name: str | None = None) -> Any:
    """A stored payload (current schema version) straight from its JSON text to its model.

    pydantic parses and validates in one step, about twice as fast as ``json.loads`` then
    ``parse_event``.  ``type_name`` (the store's type column) selects the model directly;
    the payload's own ``type`` field is still checked by it.  Anything refused (lone
    surrogate escapes, a damaged row, a type that does not match) takes the ``json``
    route, which accepts or explains exactly as before.
    """
    model = MODELS.get(type_name) if type_name is not None else None
    try:
        if model is not None:
            return model.model_validate_json(payload)
        return _event_adapter().validate_json(payload)
    except ValidationError:
        return parse_event(json.loads(payload))


def parse_event(payload: dict[str, Any]) -> Any:
    """Validate a payload dict (with its ``type``) into its event model."""
    kind = payload.get("type") if isinstance(payload, dict) else None
    # (a non-text type, a list say, is no model's: the union below reports it)
    model = MODELS.get(kind) if isinstance(kind, str) else None
    if model is not None:
        try:
            return model.model_validate(payload)
        except ValidationError:
            pass  # the union below reports it, in its own words
    try:
        return _event_adapter().validate_python(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(
            f"event of type {payload.get('type')!r} is not valid: {where}: {first.get('msg')}",
            code="invalid_event",
        ) from exc


def to_json_bytes(model: BaseModel, *, exclude: set[str] | None = None) -> bytes:
    """A model as compact JSON bytes, key order kept; lone surrogates kept as escapes.

    pydantic's Rust serializer is the fast path, but it refuses a string holding a lone
    UTF-16 surrogate (``"\\ud83d"``, half of an emoji a provider split across two deltas),
    which strict JSON parsing accepts.  Such a model is written by ``json`` with
    ``ensure_ascii``: every non-ASCII character becomes its ``\\uXXXX`` escape, so the text
    is valid UTF-8 and reads back to exactly the same string.  Anything else that will not
    serialize is refused here with a code, never stored half-converted.
    """
    omit = getattr(model.__class__, "OMIT_NONE", None)
    if omit:  # optional fields added later are left out while unset: old bytes unchanged
        exclude = (exclude or set()) | {n for n in omit if getattr(model, n) is None}
    try:
        return model.__pydantic_serializer__.to_json(model, exclude=exclude)
    except PydanticSerializationError as exc:
        try:
            plain = model.model_dump(mode="python", exclude=exclude)
            return json.dumps(plain, ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")
        except (TypeError, ValueError, RecursionError):
            raise InputError(f"{type(model).__name__} cannot be stored as JSON: {exc}",
                             code="unstorable_value") from None


