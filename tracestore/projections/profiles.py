"""Output profiles: what a releasable answer looks like for one provider API, as data.

A profile says which native terminals count as a normal ending, which as a limit and which
as a failure; which native exception names are known; how many text blocks an answer may
have; whether tools or reasoning may appear; and whether accounting metadata is required.
The release decision reads these fields and nothing provider-specific of its own, so a new
profile is a new entry in ``PROFILES``, not new code.

Terminal values are matched exactly as the provider sent them (the normalizer never
translates them): anything no rule matches is an *unknown* ending and is held for review.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tracestore.providers.observations import Observation

TerminalOutcome = Literal["normal", "limited", "failed", "tool", "unknown"]


@dataclass(frozen=True, slots=True)
class TerminalRule:
    """Matches a native terminal; a ``None`` field is not checked."""

    outcome: Literal["normal", "limited", "failed", "tool"]
    status: str | None = None
    stop_reason: str | None = None

    def matches(self, status: str | None, stop_reason: str | None) -> bool:
        if self.status is not None and self.status != status:
            return False
        return self.stop_reason is None or self.stop_reason == stop_reason


@dataclass(frozen=True, slots=True)
class Profile:
    """One supported output profile (see the module docstring)."""

    name: str
    api: str
    "Provider name whose normalizer reads this profile's frames."
    terminals: tuple[TerminalRule, ...]
    "Checked in order; the first match classifies the terminal."
    failure_errors: frozenset[str] = frozenset()
    "Native error types that mean the provider failed the request (status ``failed``)."
    known_exceptions: frozenset[str] = frozenset()
    "Native exception names the profile knows; others are held as unknown."
    max_text_blocks: int = 1
    tools_allowed: bool = False
    reasoning_allowed: bool = False
    metadata_required: bool = False
    """Policy choice: by default a missing usage record is noted (``metadata_absent``), not
    blocking, because metadata is accounting evidence, never content acceptance."""


OPENAI_RESPONSES_TEXT = Profile(
    name="openai-responses-text",
    api="openai-responses",
    terminals=(
        TerminalRule("failed", status="failed"),
        TerminalRule("limited", status="incomplete", stop_reason="max_output_tokens"),
        TerminalRule("normal", status="completed"),
    ),
    # The stream ``error`` event precedes ``response.failed`` after an HTTP 200.
    failure_errors=frozenset({"error", "response.failed"}),
)

BEDROCK_CONVERSE_TEXT = Profile(
    name="bedrock-converse-text",
    api="bedrock-converse-stream",
    terminals=(
        TerminalRule("normal", stop_reason="end_turn"),
        TerminalRule("limited", stop_reason="max_tokens"),
        TerminalRule("tool", stop_reason="tool_use"),
    ),
    known_exceptions=frozenset({
        "modelStreamErrorException", "internalServerException", "throttlingException",
        "validationException", "serviceUnavailableException",
    }),
)

# The same one-text-answer profile for the other providers tracestore reads, so a real
# capture from any of them gets a decision.  Terminal values are the providers' own
# (PROVIDER-FORMATS.md); anything else (stop sequences, refusals, safety stops, tool calls)
# is not a normal ending of this profile and is held or classified as below.
def _stop_reason_profile(name: str, api: str, normal: str, limited: str,
                        tool: str | None = None) -> Profile:
    """A text profile judged by stop reason alone; an in-band ``error`` fails the request
    (Anthropic ``event: error`` after HTTP 200, a chat ``{"error": …}`` chunk …)."""
    terminals = [TerminalRule("normal", stop_reason=normal),
                 TerminalRule("limited", stop_reason=limited)]
    if tool is not None:
        terminals.append(TerminalRule("tool", stop_reason=tool))
    return Profile(name=name, api=api, terminals=tuple(terminals),
                   failure_errors=frozenset({"error"}))


ANTHROPIC_MESSAGES_TEXT = _stop_reason_profile(
    "anthropic-messages-text", "anthropic-messages", "end_turn", "max_tokens", "tool_use")
OPENAI_CHAT_TEXT = _stop_reason_profile(
    "openai-chat-text", "openai-chat", "stop", "length", "tool_calls")
XAI_CHAT_TEXT = _stop_reason_profile("xai-chat-text", "xai", "stop", "length", "tool_calls")
GEMINI_TEXT = _stop_reason_profile("gemini-text", "gemini", "STOP", "MAX_TOKENS")
OLLAMA_TEXT = _stop_reason_profile("ollama-text", "ollama", "stop", "length")

PROFILES: dict[str, Profile] = {p.name: p for p in (
    OPENAI_RESPONSES_TEXT, BEDROCK_CONVERSE_TEXT, ANTHROPIC_MESSAGES_TEXT, OPENAI_CHAT_TEXT,
    XAI_CHAT_TEXT, GEMINI_TEXT, OLLAMA_TEXT,
)}

#: The profile an attempt gets when its trace names none.
DEFAULT_PROFILE_FOR_API: dict[str, str] = {p.api: p.name for p in PROFILES.values()}


def profile_for(api: str, trace_profile: str | None = None) -> Profile | None:
    """The profile judging an attempt of ``api``; ``None`` when none fits.

    A trace-level profile wins, but only for attempts of its own API: a profile written
    for one provider's terminals must never judge another provider's frames.
    """
    name = trace_profile or DEFAULT_PROFILE_FOR_API.get(api)
    profile = PROFILES.get(name) if name else None
    if profile is None or profile.api != api:
        return None
    return profile


def classify_terminal(profile: Profile, obs: Observation) -> TerminalOutcome:
    for rule in profile.terminals:
        if rule.matches(obs.status, obs.stop_reason):
            return rule.outcome
    return "unknown"


def error_name(obs: Observation) -> str:
    """The native name of an error observation (exception type, or ``error`` for OpenAI)."""
    return obs.native_type or obs.error_code or "error"


def classify_error(profile: Profile, obs: Observation) -> Literal["failed", "exception", "unknown"]:
    name = error_name(obs)
    if name in profile.failure_errors:
        return "failed"
    if name in profile.known_exceptions or obs.error_code in profile.known_exceptions:
        return "exception"
    return "unknown"
