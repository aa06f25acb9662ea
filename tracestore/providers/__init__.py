"""Provider normalizers: native stream events → provider-neutral observations.

Each provider module registers itself when imported; ``make_normalizer`` imports the
provider it is asked for, and ``PROVIDERS`` (from this package) is the full registry.
"""

from typing import Any

from tracestore.providers.observations import OBSERVATION_KINDS, Observation, ObservationKind
from tracestore.providers.base import (PROVIDER_NAMES, Normalizer, NormalizerProtocol,
                                       make_normalizer, normalize_all)

# A provider module registers itself when imported; ``make_normalizer`` imports the one it
# is asked for (``base.PROVIDER_MODULES``), so reading one API's attempts loads one
# normalizer.  ``PROVIDERS`` from here is the full registry (every provider imported).
_LAZY = {"binding_digest": "app_frames", "bedrock_native_from_message": "bedrock"}


def __getattr__(name: str) -> Any:
    import importlib

    if name == "PROVIDERS":
        from tracestore.providers import base

        base._ensure_loaded()
        return base.PROVIDERS
    if name in _LAZY:
        return getattr(importlib.import_module(f"tracestore.providers.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'tracestore.providers' has no attribute {name!r}")


__all__ = [
    "OBSERVATION_KINDS", "Observation", "ObservationKind", "PROVIDER_NAMES", "PROVIDERS",
    "Normalizer", "NormalizerProtocol", "make_normalizer", "normalize_all",
    "bedrock_native_from_message", "binding_digest",
]
