"""Provider normalizers: native stream events → provider-neutral observations.

Importing this package registers every provider (see :data:`PROVIDERS`).
"""

from tracestore.providers.observations import OBSERVATION_KINDS, Observation, ObservationKind
from tracestore.providers.base import (PROVIDER_NAMES, PROVIDERS, Normalizer, NormalizerProtocol,
                                       make_normalizer, normalize_all)
# Importing each provider module registers it.
from tracestore.providers import openai_responses as _openai_responses  # noqa: F401
from tracestore.providers import openai_chat as _openai_chat  # noqa: F401
from tracestore.providers import anthropic as _anthropic  # noqa: F401
from tracestore.providers import bedrock as _bedrock  # noqa: F401
from tracestore.providers import gemini as _gemini  # noqa: F401
from tracestore.providers import xai as _xai  # noqa: F401
from tracestore.providers import ollama as _ollama  # noqa: F401
from tracestore.providers import app_frames as _app_frames  # noqa: F401
from tracestore.providers import faq_endpoint as _faq_endpoint  # noqa: F401
from tracestore.providers.app_frames import binding_digest
from tracestore.providers.bedrock import bedrock_native_from_message

__all__ = [
    "OBSERVATION_KINDS", "Observation", "ObservationKind", "PROVIDER_NAMES", "PROVIDERS",
    "Normalizer", "NormalizerProtocol", "make_normalizer", "normalize_all",
    "bedrock_native_from_message", "binding_digest",
]
