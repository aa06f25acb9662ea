"""Provider normalizers: native stream events → provider-neutral observations.

Importing this package registers every provider (see :data:`PROVIDERS`).
"""

from tracestore.providers.observations import OBSERVATION_KINDS, Observation, ObservationKind
from tracestore.providers.base import (PROVIDER_NAMES, PROVIDERS, Normalizer, NormalizerProtocol,
                                       make_normalizer, normalize_all)
from tracestore.providers import openai_responses as _openai_responses  # noqa: F401  (registers)
from tracestore.providers import bedrock as _bedrock  # noqa: F401  (registers)
from tracestore.providers.bedrock import bedrock_native_from_message

__all__ = [
    "OBSERVATION_KINDS", "Observation", "ObservationKind", "PROVIDER_NAMES", "PROVIDERS",
    "Normalizer", "NormalizerProtocol", "make_normalizer", "normalize_all",
    "bedrock_native_from_message",
]
