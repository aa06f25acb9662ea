"""Normalizer contract, provider registry and small shared helpers.

A normalizer turns ONE native event (the JSON value a provider sent, already decoded
from its framing) into zero or more :class:`Observation` objects.  It is a pure,
deterministic function of the events fed so far: no I/O, no clock, no randomness.  It
keeps state only where the provider's protocol forces it (Anthropic block index → block
type, chat tool-call index → id, accumulated tool arguments), so replaying the same
natives always yields the same observations.  Unrecognised shapes become ``unknown``
observations, never exceptions: a reader must not crash on a provider's future event
type, and projections decide what an unknown form means for release.
"""

from __future__ import annotations

from typing import (Any, Callable, ClassVar, Iterable, Mapping, Protocol, TypeGuard, TypeVar,
                    runtime_checkable)

from tracestore.errors import InputError
from tracestore.providers.observations import Observation

__all__ = [
    "Normalizer", "NormalizerProtocol", "PROVIDERS", "PROVIDER_NAMES", "make_normalizer",
    "normalize_all", "register",
]

#: Stable provider names (they appear on the CLI and in stored events).
PROVIDER_NAMES: tuple[str, ...] = (
    "openai-responses", "openai-chat", "anthropic-messages", "bedrock-converse-stream",
    "gemini", "xai", "ollama", "app-frames", "faq-endpoint", "openai-realtime", "gemini-live",
    "cohere-v2",
)

#: name → normalizer class; filled by :func:`register` when the provider modules import.
PROVIDERS: dict[str, type[Normalizer]] = {}


@runtime_checkable
class NormalizerProtocol(Protocol):
    """Structural type for anything that can stand in for a normalizer."""

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]: ...


class Normalizer:
    """Base class: subclasses implement :meth:`feed` and set ``provider``."""

    provider: ClassVar[str] = ""

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        """Normalize one native event.  ``event_name`` is the SSE ``event:`` field, if any."""
        raise NotImplementedError

    def kinds(self, native: Any, event_name: str | None = None) -> tuple[str, ...]:
        """The kinds of the observations ``feed`` returns for ``native`` (and the same state
        change).  Bulk ingest stores only the kinds; a normalizer may answer its most
        frequent frames here without building observations (tests/test_ingest_fast.py
        checks it equals ``feed`` on every real capture)."""
        return tuple(o.kind for o in self.feed(native, event_name))


N = TypeVar("N", bound=type[Normalizer])


def register(name: str) -> Callable[[N], N]:
    """Class decorator adding a normalizer to :data:`PROVIDERS` under a stable name."""

    def wrap(cls: N) -> N:
        if name not in PROVIDER_NAMES:
            raise ValueError(f"provider name {name!r} is not in PROVIDER_NAMES")
        cls.provider = name
        PROVIDERS[name] = cls
        return cls

    return wrap


#: The module of each provider (under ``tracestore.providers``): importing it registers it.
PROVIDER_MODULES: dict[str, str] = {
    "openai-responses": "openai_responses", "openai-chat": "openai_chat",
    "anthropic-messages": "anthropic", "bedrock-converse-stream": "bedrock",
    "gemini": "gemini", "xai": "xai", "ollama": "ollama", "app-frames": "app_frames",
    "faq-endpoint": "faq_endpoint", "openai-realtime": "openai_realtime",
    "gemini-live": "gemini_live", "cohere-v2": "cohere",
}


def _ensure_loaded(provider: str | None = None) -> None:
    """Register ``provider`` (every provider when None) by importing its module: a
    command that reads one API's attempts loads one normalizer, not nine."""
    import importlib

    names = PROVIDER_NAMES if provider is None else (provider,)
    for name in names:
        if name not in PROVIDERS and name in PROVIDER_MODULES:
            importlib.import_module(f"tracestore.providers.{PROVIDER_MODULES[name]}")


def make_normalizer(provider: str, **options: Any) -> Normalizer:
    """A fresh normalizer for ``provider`` (options go to its constructor, e.g. app-frames'
    ``expected_binding``).  Unknown names raise ``InputError(code="unknown_provider")``."""
    _ensure_loaded(provider)
    cls = PROVIDERS.get(provider)
    if cls is None:
        raise InputError(
            f"unknown provider {provider!r}; expected one of {', '.join(PROVIDER_NAMES)}",
            code="unknown_provider", provider=provider)
    return cls(**options)


def normalize_all(provider: str, natives: Iterable[Any]) -> list[list[Observation]]:
    """Feed every native through one fresh normalizer; one observation list per native."""
    normalizer = make_normalizer(provider)
    return [normalizer.feed(native) for native in natives]


# ---------------------------------------------------------------------------------------
# helpers shared by the provider modules (tolerant readers: wrong types become None)

def as_str(value: Any) -> str | None:
    """``value`` if it is a string, else ``None`` (never ``str()`` of a foreign value)."""
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """``value`` if it is a real int (bools excluded), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``value`` is a mapping.  Parsed JSON is always a dict, so the exact-type test
    comes first: ``isinstance`` against ``typing.Mapping`` goes through typing's and abc's
    checks in Python (a fifth of normalizing an OpenAI Chat chunk)."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def as_map(value: Any) -> Mapping[str, Any] | None:
    """``value`` if it is a mapping, else ``None``."""
    return value if is_map(value) else None


def unknown(native_type: str, **fields: Any) -> list[Observation]:
    """The single ``unknown`` observation for a shape we do not recognise."""
    return [Observation("unknown", native_type, **fields)]
