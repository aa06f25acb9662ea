"""The normalized observation: one provider-neutral fact read from one native stream event.

Why a single flat record instead of a class per kind: projections (release decision,
attempt view, review record) filter and fold over long observation lists, and one
frozen dataclass with optional fields compares, hashes-by-value in tests and serializes
without a type registry.  Every field keeps the provider's own value (native stop
reasons, native error codes, native usage mappings): translating them is a policy
decision that belongs to the projections, not to the reader.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Literal, Mapping, get_args

ObservationKind = Literal[
    "message_start", "text_delta", "reasoning_delta", "block_start", "block_stop",
    "tool_call_start", "tool_call_delta", "tool_call_done", "final_text", "usage", "terminal",
    "error", "keepalive", "raw", "unknown",
]

#: Every kind, in declaration order (handy for validation and documentation).
OBSERVATION_KINDS: tuple[str, ...] = get_args(ObservationKind)


@dataclass(frozen=True, slots=True)
class Observation:
    """One normalized fact.  Fields that do not apply stay ``None`` (never invented)."""

    kind: ObservationKind
    #: The provider's own event name (``response.output_text.delta``, ``contentBlockDelta``,
    #: ``modelStreamErrorException``, ``message_stop``, ``[DONE]`` ...): the audit trail back
    #: to the native vocabulary.
    native_type: str
    #: Content block / output index the observation belongs to, when the provider has one.
    block: int | None = None
    #: For block_start (and tool_call_start/block_stop when known): text, tool_use, reasoning ...
    block_type: str | None = None
    #: text_delta / reasoning_delta / final_text text, exactly as sent.
    text: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    #: tool_call_delta: the fragment; tool_call_done: the authoritative full string.
    arguments: str | None = None
    #: terminal: the native stop/finish reason exactly as sent, ``None`` when absent.
    stop_reason: str | None = None
    #: terminal: native status where the provider has one (completed, incomplete, failed ...).
    status: str | None = None
    #: error (or failed terminal): the native code / type / exception name.
    error_code: str | None = None
    message: str | None = None
    #: The native usage mapping itself (not a copy, never zero-filled).
    usage: Mapping[str, Any] | None = None
    #: Opaque signatures (thoughtSignature, signature_delta, Bedrock reasoning signature).
    signature: str | None = None
    #: Native sequence number (OpenAI ``sequence_number``, app-frame ``sequence``) if present.
    sequence: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The observation as a plain dict with ``None`` fields omitted (stable, compact)."""
        return {key: value for key, value in asdict(self).items() if value is not None}


def _slot_init(cls: type) -> Any:
    """The dataclass ``__init__`` of ``cls`` (same parameters, same defaults), setting each
    slot through its descriptor.  A frozen dataclass's own ``__init__`` calls
    ``object.__setattr__`` once per field, looked up each time: 1.7 µs for an Observation,
    which normalizers make for every frame (most of a large ingest's normalizing); this is
    half of that, and the instance is the same."""
    if any(f.default_factory is not MISSING or not f.init for f in fields(cls)):
        return cls.__init__  # type: ignore[misc]  # (not needed by Observation)
    names = [f.name for f in fields(cls)]
    params = ", ".join(name if f.default is MISSING else f"{name}=_d_{name}"
                       for name, f in zip(names, fields(cls)))
    body = "\n".join(f"    _s_{name}(self, {name})" for name in names)
    scope: dict[str, Any] = {f"_s_{name}": cls.__dict__[name].__set__ for name in names}
    scope.update({f"_d_{f.name}": f.default for f in fields(cls) if f.default is not MISSING})
    exec(f"def __init__(self, {params}) -> None:\n{body}\n", scope)  # as dataclasses does
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


Observation.__init__ = _slot_init(Observation)  # type: ignore[method-assign]
