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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from tracestore.contracts.frames import FrameLimits
from tracestore.providers.observations import Observation

TerminalOutcome = Literal["normal", "limited", "failed", "tool", "cancelled", "refused",
                          "unknown"]


@dataclass(frozen=True, slots=True)
class TerminalRule:
    """Matches a native terminal; a ``None`` field is not checked."""

    outcome: Literal["normal", "limited", "failed", "tool", "cancelled", "refused"]
    status: str | None = None
    stop_reason: str | None = None
    native_type: str | None = None
    "The terminal's native event (one provider may end in two ways with the same values)."
    reason: str | None = None
    """The stable reason code a ``refused`` ending is reported with (the provider's own
    value stays in the attempt view's terminal)."""

    def matches(self, status: str | None, stop_reason: str | None,
                native_type: str | None = None) -> bool:
        if self.status is not None and self.status != status:
            return False
        if self.native_type is not None and self.native_type != native_type:
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
    non_answer_blocks: frozenset[str] = frozenset()
    """Non-text block types that are neither content nor reasoning of this answer: they
    neither hold it nor enter its text (see ``ANTHROPIC_NON_ANSWER_BLOCKS``)."""
    metadata_required: bool = False
    """Policy choice: by default a missing usage record is noted (``metadata_absent``), not
    blocking, because metadata is accounting evidence, never content acceptance."""
    inline_reasoning_tags_allowed: bool = False
    """Whether answer text may contain an inline reasoning tag (``<think>`` …, see
    ``INLINE_REASONING_TAGS``).  Off by default: a model that writes its reasoning into the
    text channel (qwen3 through Ollama's ``/api/generate``) would otherwise have that
    reasoning released as the answer.  A deployment that strips the tags before showing
    the text may turn it on."""
    structured: bool = False
    """The answer is a structured reply judged by the trace's output contract (a bound
    contract makes any profile's answer structured)."""
    frame_rules: bool = False
    "Seed 000's exact application-frame checks (``tracestore.contracts.frames``) apply."
    limits: FrameLimits | None = None
    event_rules: bool = False
    "Seed 004's client-side event contract (``tracestore.contracts.events_check``) applies."
    max_text_chars: int | None = None
    """Characters one streamed answer may have (seed 004's ``MAX_CHARS``): over it the
    answer is rejected (``too_large``), never cut and never released."""
    envelope_frames: bool = False
    """The terminal event carries seed 004's envelope; a structured reply is its ``result``
    (re-judged against the trace's contract, never trusted)."""
    drain_error_status: Literal["interrupted", "failed"] = "interrupted"
    """The status of a transport that ended with an I/O error.  Seed 003 calls a stream
    that broke off ``interrupted``; seed 000's consumer reports its own transport's I/O
    error as ``error`` (a failure it observed, unlike EOF: ``incomplete``), so its profile
    says ``failed``.  The reasons stay the same either way."""
    reason_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    "Generic reason code → the name this profile's source uses for the same fact."
    required_destinations: tuple[str, ...] = ()
    """Destinations (ui, history, export, copy) the turn's released answer must reach,
    once each, whenever the application records its own destination writes for the turn
    (seed 003): the audit names a missing one ``missing_destination_write``.
    History is owed without it once the application records history writes (seed 003's
    "one matching history entry"); see ``projections/destinations.py``."""

    def reason(self, code: str) -> str:
        return self.reason_names.get(code, code)


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
def _stop_reasons(normal: str, limited: str, tool: str | None = None
                  ) -> tuple[TerminalRule, ...]:
    """Terminal rules judged by stop reason alone."""
    rules = [TerminalRule("normal", stop_reason=normal),
             TerminalRule("limited", stop_reason=limited)]
    if tool is not None:
        rules.append(TerminalRule("tool", stop_reason=tool))
    return tuple(rules)


def _stop_reason_profile(name: str, api: str, *terminals: TerminalRule) -> Profile:
    """A text profile whose in-band ``error`` fails the request (Anthropic ``event: error``
    after HTTP 200, a chat ``{"error": …}`` chunk, an Interactions ``event: error`` …)."""
    return Profile(name=name, api=api, terminals=terminals,
                   failure_errors=frozenset({"error", "response.failed"}))


#: Anthropic Messages: ``message_stop`` with the last ``message_delta``'s stop reason.
_MESSAGES_ENDS = _stop_reasons("end_turn", "max_tokens", "tool_use")
#: Chat Completions: the ``finish_reason`` chunk.
_CHAT_ENDS = _stop_reasons("stop", "length", "tool_calls")
#: Responses lifecycle ends, judged by status (seed 002: ``response.completed`` is the end).
_RESPONSES_ENDS = (
    TerminalRule("failed", status="failed"),
    TerminalRule("limited", status="incomplete", stop_reason="max_output_tokens"),
    TerminalRule("normal", status="completed"),
)
#: Gemini Interactions ``interaction.completed.status`` (seed 002: completed → end,
#: requires_action → tool use; incomplete is an answer cut short, failed a failure;
#: cancelled and anything else stay unknown and are held).
_INTERACTIONS_ENDS = (
    TerminalRule("normal", status="completed"),
    TerminalRule("tool", status="requires_action"),
    TerminalRule("limited", status="incomplete"),
    TerminalRule("failed", status="failed"),
)

#: Anthropic blocks that every official SDK leaves out of the answer text and that say
#: nothing about how this answer was reasoned: ``compaction`` is the server's summary of the
#: EARLIER context, state the client sends back on its next request (its
#: ``compaction_delta`` is kept raw); ``fallback`` records that the server answered with
#: another model ({from, to}), metadata with no content.  A thinking block, by contrast,
#: is this answer's reasoning and stays held.
ANTHROPIC_NON_ANSWER_BLOCKS = frozenset({"compaction", "fallback"})
ANTHROPIC_MESSAGES_TEXT = replace(_stop_reason_profile(
    "anthropic-messages-text", "anthropic-messages", *_MESSAGES_ENDS),
    non_answer_blocks=ANTHROPIC_NON_ANSWER_BLOCKS)
OPENAI_CHAT_TEXT = _stop_reason_profile("openai-chat-text", "openai-chat", *_CHAT_ENDS)
# xAI serves chat completions, Responses and Messages; one xai normalizer reads all three
# (by payload shape), so one profile knows all three surfaces' endings.  Their values do
# not overlap (``stop`` / ``end_turn`` / status ``completed``), so no rule can misfire.
XAI_TEXT = _stop_reason_profile("xai-text", "xai", *_CHAT_ENDS, *_RESPONSES_ENDS,
                                *_MESSAGES_ENDS)
#: Gemini ``finishReason`` values that mean the model's output was blocked by a safety,
#: recitation, blocklist, prohibited-content or personal-data filter (``Candidate.FinishReason``
#: in the Gemini API reference and google-genai's ``FinishReason``; seed 002: "safety enums →
#: refusal").  ``LANGUAGE``, ``OTHER``, ``MALFORMED_FUNCTION_CALL`` and the tool-call errors
#: are not refusals and stay unknown (held).
GEMINI_REFUSAL_FINISH_REASONS: tuple[str, ...] = (
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
)
_GEMINI_REFUSALS = (
    *(TerminalRule("refused", stop_reason=value, native_type="finishReason",
                   reason="native_refusal") for value in GEMINI_REFUSAL_FINISH_REASONS),
    # ``promptFeedback.blockReason`` with no candidates: the prompt itself was blocked, so
    # no answer was ever generated, whatever the block reason (seed 002: → refusal).
    TerminalRule("refused", native_type="promptFeedback", reason="prompt_blocked"),
)
# generateContent ends with ``finishReason``; Interactions with ``interaction.completed``.
GEMINI_TEXT = _stop_reason_profile("gemini-text", "gemini",
                                   *_stop_reasons("STOP", "MAX_TOKENS"), *_GEMINI_REFUSALS,
                                   *_INTERACTIONS_ENDS)
OLLAMA_TEXT = _stop_reason_profile("ollama-text", "ollama", *_stop_reasons("stop", "length"))
#: Cohere v2 chat: ``message-end``'s ``finish_reason``; ``ERROR`` is the request failing
#: (``TIMEOUT`` and ``STOP_SEQUENCE`` are not this profile's normal ending: held).
COHERE_V2_TEXT = _stop_reason_profile(
    "cohere-v2-text", "cohere-v2", *_stop_reasons("COMPLETE", "MAX_TOKENS", "TOOL_CALL"),
    TerminalRule("failed", stop_reason="ERROR"))

# Seed 000's consumer: the application's own NDJSON frames carrying a structured reply.
# ``done`` is the normal ending, ``cancel`` a local cancellation, ``error`` a local error
# terminal; the seed's own names replace the generic reasons where it has one.
APP_FRAMES_STRUCTURED = Profile(
    name="app-frames-structured",
    api="app-frames",
    terminals=(
        TerminalRule("normal", status="done"),
        TerminalRule("cancelled", status="cancel"),
        TerminalRule("failed", status="error"),
    ),
    failure_errors=frozenset({"error"}),
    structured=True,
    frame_rules=True,
    drain_error_status="failed",
    limits=FrameLimits(),
    reason_names=MappingProxyType({
        "no_native_terminal": "missing_terminal",
        "drain_error": "transport_io_error",
        "native_failure": "controlled_local_error",
    }),
)

# Seed 004's streaming FAQ endpoint: chunks, then one done/error event carrying the envelope.
FAQ_ENDPOINT = Profile(
    name="faq-endpoint",
    api="faq-endpoint",
    terminals=(TerminalRule("normal", status="done"),),
    failure_errors=frozenset({"error"}),
    event_rules=True,
    envelope_frames=True,
    max_text_chars=4000,
    reason_names=MappingProxyType({"native_failure": "endpoint_error"}),
)

# Realtime sessions (OpenAI Realtime and its Azure and xAI relatives; Gemini Live): one
# response or turn of a session is one attempt.  ``response.done`` keeps the Realtime
# status as sent: a cancelled response (the user barged in, or the client cancelled) is
# never a normal ending; an incomplete one was cut by a token limit or by the content
# filter (a refusal).  A session ``error`` while a response is in flight fails it.
OPENAI_REALTIME_TEXT = Profile(
    name="openai-realtime-text",
    api="openai-realtime",
    terminals=(
        TerminalRule("normal", status="completed"),
        TerminalRule("refused", status="incomplete", stop_reason="content_filter",
                     reason="native_refusal"),
        TerminalRule("limited", status="incomplete", stop_reason="max_output_tokens"),
        TerminalRule("cancelled", status="cancelled"),
        TerminalRule("failed", status="failed"),
    ),
    failure_errors=frozenset({"error"}),
)
# Gemini Live ends a turn with ``turnComplete`` and nothing else; an interrupted turn is
# a local Stop placed by the ingest, not a terminal.
GEMINI_LIVE_TEXT = Profile(
    name="gemini-live-text",
    api="gemini-live",
    terminals=(TerminalRule("normal", native_type="turnComplete"),),
)

_BASE_PROFILES = (
    OPENAI_RESPONSES_TEXT, BEDROCK_CONVERSE_TEXT, ANTHROPIC_MESSAGES_TEXT, OPENAI_CHAT_TEXT,
    XAI_TEXT, GEMINI_TEXT, OLLAMA_TEXT, COHERE_V2_TEXT, APP_FRAMES_STRUCTURED, FAQ_ENDPOINT,
    OPENAI_REALTIME_TEXT, GEMINI_LIVE_TEXT,
)

#: Seed 003's whole destination policy: "on release the answer goes to the UI,
#: ONE history entry, export and copy — once".  Each one-text-answer profile has a twin,
#: ``<name>-every-destination``, that a trace names (``TraceOpened.profile``) when its
#: application must deliver the released answer to all four: the same verdicts, and the
#: audit names every one the answer never reached.
EVERY_DESTINATION: tuple[str, ...] = ("ui", "history", "export", "copy")
EVERY_DESTINATION_SUFFIX = "-every-destination"
_DELIVERY_PROFILES = tuple(
    replace(p, name=f"{p.name}{EVERY_DESTINATION_SUFFIX}",
            required_destinations=EVERY_DESTINATION)
    for p in _BASE_PROFILES if not (p.structured or p.envelope_frames))

PROFILES: dict[str, Profile] = {p.name: p for p in (*_BASE_PROFILES, *_DELIVERY_PROFILES)}

#: The profile an attempt gets when its trace names none.
DEFAULT_PROFILE_FOR_API: dict[str, str] = {p.api: p.name for p in _BASE_PROFILES}


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


#: Inline reasoning tags a model may write into its answer text (matched case-insensitively,
#: with optional spaces inside the brackets): ``<think>``, ``<thinking>``, ``<reasoning>``.
INLINE_REASONING_TAGS: tuple[str, ...] = ("think", "thinking", "reasoning")


def terminal_rule(profile: Profile, obs: Observation) -> TerminalRule | None:
    """The first rule of ``profile`` matching the terminal ``obs``; None: unknown ending."""
    for rule in profile.terminals:
        if rule.matches(obs.status, obs.stop_reason, obs.native_type):
            return rule
    return None


def classify_terminal(profile: Profile, obs: Observation) -> TerminalOutcome:
    rule = terminal_rule(profile, obs)
    return rule.outcome if rule is not None else "unknown"


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
