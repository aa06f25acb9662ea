"""The attempt view: what one stream attempt delivered, judged against its profile.

The candidate answer is assembled ONLY from text deltas, per content block.  Source
final-text events (``response.output_text.done``, the text inside ``response.completed``)
are compared with the deltas and never appended: appending them is exactly the duplicated
answer seed 003's S1 warns about.  Usage stays ``None`` when no metadata arrived — never an
invented zero.

Frames are re-normalized here (the ``kinds`` stored at ingest are for display only), so a
projection depends on the native payloads and the normalizer, nothing else.  The fold is
incremental (``AttemptFold.apply`` one event at a time) because the release decision must
be judged at every global position, and the replay planner judges while it plans.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from tracestore.contracts.events_check import EventRules
from tracestore.contracts.frames import FrameChecker
from tracestore.errors import InputError
from tracestore.events import (
    AttemptStarted, CaptureStored, FrameReceived, FrameRejected, LocalStopped, StoredEvent, TraceOpened,
    TransportDrained,
)
from tracestore.projections import reasons as R
# The form checks the fold inherits (attempt_checks.py) have their own module, as have the
# view's data classes and the log look-ups; all importable from here.
from tracestore.projections.attempt_checks import (  # noqa: F401
    _GRAMMAR_APIS, AttemptChecks, _broken_edges,
)
from tracestore.projections.attempt_log import (  # noqa: F401
    TraceBindings, find_bindings, find_start, find_trace, visible,
)
from tracestore.projections.attempt_view import (  # noqa: F401
    Anomaly, AttemptView, BlockText, Drain, FinalTextCheck, NativeError, NativeTerminal,
)
from tracestore.projections.inline_tags import InlineTagScanner
from tracestore.projections.profiles import (
    FrameLimits, Profile, classify_error, error_name, profile_for, terminal_rule,
)
from tracestore.projections.usage import merge_usage
from tracestore.providers.base import Normalizer, make_normalizer
from tracestore.providers.observations import Observation

#: Errors the app-frames normalizer reports that seed 000's frame rules already judge (with
#: the seed's own codes) when a profile applies them.
_FRAME_RULE_ERRORS = frozenset({"sequence_gap", "binding_mismatch", "frame_after_terminal"})

#: Observation kinds that carry no content and need no judgement.
_BENIGN_KINDS = frozenset({"message_start", "block_stop", "keepalive"})

#: ``raw`` observations of these block types are reasoning in another form (a Bedrock or
#: Anthropic signature, Bedrock ``redactedContent``, a Gemini Interactions thought
#: signature): reasoning all the same, so a profile without reasoning holds them.
_REASONING_BLOCK_TYPES = frozenset({"reasoning", "redacted_reasoning"})


class AttemptFold(AttemptChecks):
    """Mutable accumulator behind :class:`AttemptView`; feed events in position order."""

    #: Frame position → the normalizer's observations of it, kept only when a caller sets a
    #: dict here (the trace page describes frames from them instead of normalizing again).
    observed: dict[int, list[Observation]] | None = None

    def __init__(self, start: StoredEvent, profile: Profile | None,
                 bindings: TraceBindings | None = None) -> None:
        self.start = start
        self.started: AttemptStarted = start.event
        self.profile = profile
        self.bindings = bindings or TraceBindings()
        self.structured = bool(profile and (profile.structured
                                            or self.bindings.contract is not None))
        self.checker = (FrameChecker(profile.limits or FrameLimits(),
                                     self.bindings.binding_sha256)
                        if profile is not None and profile.frame_rules else None)
        self.frame_failure: Anomaly | None = None
        self.event_rules = EventRules() if profile is not None and profile.event_rules else None
        self.sent_envelope: Mapping[str, Any] | None = None
        self.normalizer = _normalizer(self.started.api)
        # Each text block's deltas joined as they arrive: one string per block, grown in
        # place (a list of pieces and their join would hold a long answer twice at the
        # drain), with where each delta ends in it and the log position it arrived at.
        self.texts: dict[int | None, str] = {}
        self.ends: dict[int | None, array[int]] = {}
        self.block_pos: dict[int | None, array[int]] = {}
        self._cr_ends: set[int | None] = set()  # blocks with a delta ending in CR
        self.final_keys: set[tuple[str, int | None]] = set()
        self.final_texts: list[FinalTextCheck] = []
        self.terminals: list[NativeTerminal] = []
        self.errors: list[NativeError] = []
        self.anomalies: list[Anomaly] = []
        self.frames = 0
        self.last_frame_position: int | None = None
        self.stop_position: int | None = None
        self.drain: Drain | None = None
        self.usage: Mapping[str, Any] | None = None
        self.usage_position: int | None = None
        self.usage_positions: list[int] = []
        self._usage_type: str | None = None
        self.superseded_at: int | None = None
        self.superseded_by: str | None = None
        self._inline_tags_scan = InlineTagScanner()
        self._grammar = self.started.api in _GRAMMAR_APIS
        self._message_started = False
        self._start_native: Any = None  # the first start frame's payload
        self._content_since_start = False
        self._early: int | None = None  # where content came before any start frame
        self._sequence: int | None = None  # the last Responses sequence_number
        self._resumed = False  # a capture stored after frames opens a resumed connection
        self._view: AttemptView | None = None  # the last view built; any apply drops it
        self._joined: str | None = None  # the joined candidate text; a new piece drops it

    # -- derived facts the release decision reads ------------------------------------
    @property
    def normal_ending(self) -> bool:
        return bool(self.terminals) and self.terminals[0].outcome == "normal"

    def text(self) -> str:
        """The candidate answer so far, joined once per state (the judge, its recorded
        ``decided_text`` and the view share the one string: a long answer is not held
        again for each of them)."""
        if self._joined is None:
            blocks = list(self.texts.values())
            self._joined = blocks[0] if len(blocks) == 1 else "".join(blocks)
        return self._joined

    # -- folding ---------------------------------------------------------------------
    def apply(self, stored: StoredEvent) -> bool:
        """Fold one event; True when it concerns this attempt (or supersedes it)."""
        self._view = None
        event = stored.event
        if isinstance(event, AttemptStarted):
            return self._maybe_superseded(stored, event)
        if getattr(event, "attempt_id", None) != self.started.attempt_id:
            return False
        if isinstance(event, FrameReceived):
            self._frame(stored.position, event)
        elif isinstance(event, LocalStopped):
            if self.stop_position is None:
                self.stop_position = stored.position
        elif isinstance(event, TransportDrained):
            if self.drain is None:
                self.drain = Drain(stored.position, event.outcome, event.detail)
        elif isinstance(event, CaptureStored):
            if not self.frames:
                return False
            self._resumed = True
        elif isinstance(event, FrameRejected):
            if self.frame_failure is None:
                detail = f"byte {event.offset}" if event.offset is not None else event.detail
                self.frame_failure = Anomaly(stored.position, event.code, "frame", detail)
        else:
            return False
        return True

    def _maybe_superseded(self, stored: StoredEvent, event: AttemptStarted) -> bool:
        if (event.trace_id != self.started.trace_id or stored.position <= self.start.position
                or event.attempt_id == self.started.attempt_id or self.superseded_at is not None):
            return False
        self.superseded_at, self.superseded_by = stored.position, event.attempt_id
        return True

    def _frame(self, position: int, frame: FrameReceived) -> None:
        self.frames += 1
        self.last_frame_position = position
        if self.checker is not None and self.frame_failure is None:
            code = self.checker.check(frame.native, frame.length)
            if code is not None:  # the consumer stops reading at its first failure
                where = f"byte {frame.offset}" if frame.offset is not None else None
                self.frame_failure = Anomaly(position, code, str(frame.native.get("kind"))
                                             if isinstance(frame.native, Mapping) else "frame",
                                             where)
        if self.event_rules is not None:
            self._event_rules(position, frame)
        if self.normalizer is None:
            self._anomaly(position, R.UNKNOWN_NATIVE_FORM, frame.api, "no normalizer")
            return
        observations = self.normalizer.feed(frame.native, frame.event_name)
        if self.observed is not None:
            observations = self.observed[position] = list(observations)
        self._observed(position, frame.native, observations)

    @property
    def folds_observed(self) -> bool:
        """Whether ``frame_observed`` may fold this attempt's frames: no frame checker, no
        event rules and a normalizer (then a frame's fold is its observations alone)."""
        return self.checker is None and self.event_rules is None and self.normalizer is not None

    def frame_observed(self, position: int, native: Any, observations: Sequence[Observation],
                       ) -> None:
        """``apply`` of one of this attempt's ``frame.received`` whose observations a twin
        of this fold's normalizer (same API, fed the same frames in order) already made:
        the ingest planner's.  Only when ``folds_observed``; the fold's own normalizer is
        then never fed, so every frame of the attempt must come this way."""
        self._view = None
        self.frames += 1
        self.last_frame_position = position
        self._observed(position, native, observations)

    def _observed(self, position: int, native: Any, observations: Sequence[Observation]) -> None:
        if self._grammar and self.started.api == "openai-responses":
            self._check_sequence(position, native)
        for obs in observations:
            if self._grammar:
                self._check_grammar(position, obs, native)
            self._observe(position, obs)

    def structured_text(self, contract: Any) -> str:
        """The structured reply to judge: the deltas, or an endpoint envelope's ``result``
        (whose version is the envelope's ``schema_version``)."""
        if not (self.profile and self.profile.envelope_frames):
            return self.text()
        result = (self.sent_envelope or {}).get("result")
        if not isinstance(result, Mapping):
            return ""
        reply = dict(result)
        field = contract.doc.version_field if contract is not None else None
        if field and field not in reply and self.sent_envelope is not None:
            reply = {field: self.sent_envelope.get("schema_version"), **reply}
        return json.dumps(reply, ensure_ascii=False)

    def _observe(self, position: int, obs: Observation) -> None:
        kind = obs.kind
        if kind in _BENIGN_KINDS:
            return
        if kind == "raw":
            if obs.block_type in _REASONING_BLOCK_TYPES and not (
                    self.profile and self.profile.reasoning_allowed):
                self._anomaly(position, R.NON_TEXT_CONTENT, obs.native_type, obs.block_type)
            return
        if kind == "text_delta":
            self._text(position, obs)
        elif kind == "final_text":
            self._final_text(position, obs)
        elif kind == "terminal":
            self._terminal(position, obs)
        elif kind == "error":
            self._error(position, obs)
        elif kind == "usage":
            if obs.usage is not None:  # a metadata event without usage leaves it absent
                self._usage(position, obs)
        elif kind == "block_start":
            self._block_start(position, obs)
        elif kind.startswith("tool_call"):
            self._tool(position, obs)
        elif kind == "reasoning_delta":
            if not (self.profile and self.profile.reasoning_allowed):
                self._anomaly(position, R.NON_TEXT_CONTENT, obs.native_type, "reasoning")
        else:  # unknown, and any kind added later that this projection does not know
            self._anomaly(position, R.UNKNOWN_NATIVE_FORM, obs.native_type, kind)

    def _usage(self, position: int, obs: Observation) -> None:
        assert obs.usage is not None
        self.usage, merged = merge_usage(self.started.api, self.usage, self._usage_type,
                                         obs.native_type, obs.usage)
        self.usage_positions = [*self.usage_positions, position] if merged else [position]
        self.usage_position, self._usage_type = position, obs.native_type

    def _text(self, position: int, obs: Observation) -> None:
        if obs.block_type not in (None, "text"):  # e.g. a refusal: not an answer text
            self._anomaly(position, R.NON_TEXT_CONTENT, obs.native_type, obs.block_type)
            return
        if self.terminals:
            self._anomaly(position, R.CONTENT_AFTER_TERMINAL, obs.native_type)
        text, block = obs.text or "", obs.block
        if block not in self.texts:
            if not text:  # an empty delta opens no block (some models send one first)
                return
            self.texts[block], self.ends[block], self.block_pos[block] = \
                "", array("q"), array("q")
            limit = self.profile.max_text_blocks if self.profile else 1
            if len(self.texts) > limit:
                self._anomaly(position, R.UNEXPECTED_TEXT_BLOCK, obs.native_type,
                              f"block {block}")
        self._joined = None  # the candidate changed: join again when asked
        joined = self.texts[block]
        self.texts[block] = ""  # the local is then its only reference: += grows it in place
        joined += text
        self.texts[block] = joined
        self.ends[block].append(len(joined))
        self.block_pos[block].append(position)
        if text.endswith("\r"):
            self._cr_ends.add(block)
        self._inline_tags(position, obs, text)

    def _inline_tags(self, position: int, obs: Observation, text: str) -> None:
        """Hold text carrying an inline reasoning tag, even one split across deltas."""
        if self.profile and self.profile.inline_reasoning_tags_allowed:
            return
        tag = self._inline_tags_scan.feed(obs.block, text)
        if tag is not None:
            self._anomaly(position, R.INLINE_REASONING_TEXT, obs.native_type, tag)

    def _final_text(self, position: int, obs: Observation) -> None:
        if obs.block_type not in (None, "text"):
            self._anomaly(position, R.NON_TEXT_CONTENT, obs.native_type, obs.block_type)
            return
        key = (obs.native_type, obs.block)
        duplicate = key in self.final_keys
        self.final_keys.add(key)
        # A final text names its block when the provider does; otherwise (or when the
        # index scheme differs from the deltas') it must agree with the whole candidate.
        reference = (self.texts[obs.block] if obs.block in self.texts
                     else self.text())
        agrees = (obs.text or "") == reference
        self.final_texts.append(FinalTextCheck(position, obs.native_type, obs.block, agrees,
                                               duplicate))
        if duplicate:
            self._anomaly(position, R.DUPLICATE_FINAL_TEXT, obs.native_type)
        if not agrees:
            self._anomaly(position, R.FINAL_TEXT_MISMATCH, obs.native_type)

    def _terminal(self, position: int, obs: Observation) -> None:
        rule = terminal_rule(self.profile, obs) if self.profile else None
        outcome = rule.outcome if rule is not None else "unknown"
        if self.terminals:
            self._anomaly(position, R.DUPLICATE_TERMINAL, obs.native_type)
        self.terminals.append(NativeTerminal(position, obs.native_type, obs.status,
                                             obs.stop_reason, outcome,
                                             rule.reason if rule is not None else None))
        if outcome == "tool" and not (self.profile and self.profile.tools_allowed):
            self._anomaly(position, R.TOOL_USE_NOT_ALLOWED, obs.native_type, obs.stop_reason)
        elif outcome in ("unknown", "tool"):
            self._anomaly(position, R.UNKNOWN_STOP_REASON, obs.native_type,
                          obs.stop_reason or obs.status)

    def _error(self, position: int, obs: Observation) -> None:
        if self.checker is not None and obs.error_code in _FRAME_RULE_ERRORS:
            return
        classification = classify_error(self.profile, obs) if self.profile else "unknown"
        self.errors.append(NativeError(position, error_name(obs), obs.error_code, obs.message,
                                       classification))

    def _block_start(self, position: int, obs: Observation) -> None:
        block_type = (obs.block_type or "text").lower()
        if self.profile is not None and block_type in self.profile.non_answer_blocks:
            return
        if "tool" in block_type:
            self._tool(position, obs)
        elif block_type != "text" and not (
                block_type.startswith("reason") and self.profile
                and self.profile.reasoning_allowed):
            self._anomaly(position, R.NON_TEXT_CONTENT, obs.native_type, block_type)

    def _tool(self, position: int, obs: Observation) -> None:
        # Recorded by name only: tool arguments are never copied into any text.
        if not (self.profile and self.profile.tools_allowed):
            self._anomaly(position, R.TOOL_USE_NOT_ALLOWED, obs.native_type, obs.tool_name)

    # -- the frozen view -------------------------------------------------------------
    def view(self) -> AttemptView:
        """The frozen view of what is folded so far (built once per state: a decision and
        its audit both ask for it)."""
        if self._view is None:
            self._view = self._build_view()
        return self._view

    def _build_view(self) -> AttemptView:
        s = self.started
        blocks = tuple(
            BlockText(b, text, self.block_pos[b][0], self.block_pos[b][-1],
                      tuple(self.ends[b]), tuple(self.block_pos[b]))
            for b, text in self.texts.items())
        return AttemptView(
            attempt_id=s.attempt_id, trace_id=s.trace_id, api=s.api, reader=s.reader,
            retry_of=s.retry_of, profile=self.profile.name if self.profile else None,
            started_at=self.start.position, frames=self.frames,
            last_frame_position=self.last_frame_position, blocks=blocks, text=self.text(),
            final_texts=tuple(self.final_texts), terminals=tuple(self.terminals),
            errors=tuple(self.errors), anomalies=tuple(self.anomalies),
            stop_position=self.stop_position, drain=self.drain, usage=self.usage,
            usage_position=self.usage_position, usage_positions=tuple(self.usage_positions),
            superseded_at=self.superseded_at,
            superseded_by=self.superseded_by, structured=self.structured,
            frame_failure=self.frame_failure, binding_sha256=self.bindings.binding_sha256,
            binding_checked=bool(self.checker and self.checker.binding_checked and self.frames),
            sent_envelope=self.sent_envelope, grapheme_splits=self._grapheme_splits())


def _normalizer(api: str) -> Normalizer | None:
    try:
        return make_normalizer(api)
    except InputError:  # an API without a normalizer: every frame becomes an anomaly
        return None


def start_fold(events: Sequence[StoredEvent], attempt_id: str) -> tuple[AttemptFold,
                                                                        TraceOpened | None]:
    """A fresh fold for ``attempt_id`` with its profile resolved from the log."""
    start = find_start(events, attempt_id)
    trace = find_trace(events, start.event.trace_id)
    profile = profile_for(start.event.api, trace.profile if trace else None)
    return AttemptFold(start, profile, find_bindings(events, start.event.trace_id)), trace


def project_attempt(events: Sequence[StoredEvent], attempt_id: str, *,
                    upto: int | None = None) -> AttemptView:
    """The attempt as of global position ``upto`` (events after it are ignored)."""
    events = visible(events, upto)
    fold, _ = start_fold(events, attempt_id)
    for stored in events:
        fold.apply(stored)
    return fold.view()
