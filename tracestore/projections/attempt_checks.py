"""The attempt fold's checks of a stream's form rather than what it says: the start-frame
grammar, Responses ``sequence_number`` order, seed 004's event rules, and deltas
that split a grapheme cluster -- with ``_anomaly``, which records what every check finds.

``AttemptFold`` (``attempt.py``) inherits them: they read and write the fold's own state
(declared below, set in ``AttemptFold.__init__``), so they are methods, moved here as they
were to keep attempt.py to the fold of the content itself.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from tracestore.contracts.events_check import EventRules
from tracestore.contracts.graphemes import clusters
from tracestore.events import FrameReceived
from tracestore.projections import reasons as R
from tracestore.projections.attempt_view import Anomaly
from tracestore.providers.observations import Observation

#: T8's own failure mode: the APIs whose streams open with a start frame
#: (Bedrock ``messageStart``, Anthropic ``message_start``, Responses ``response.created``).
#: Content before it, a second one, or a Responses ``sequence_number`` going back is a frame
#: of another stream -- what a harness that routes a late callback into "the current
#: attempt" produces -- and holds the release.
_GRAMMAR_APIS = frozenset({"bedrock-converse-stream", "anthropic-messages",
                           "openai-responses"})
_CONTENT_KINDS = frozenset({"text_delta", "reasoning_delta", "block_start", "final_text"})


class AttemptChecks:
    """The form checks of ``AttemptFold``; the attributes are the fold's (see there)."""

    anomalies: list[Anomaly]
    event_rules: EventRules | None
    sent_envelope: Mapping[str, Any] | None
    texts: dict[int | None, str]
    ends: dict[int | None, array[int]]
    block_pos: dict[int | None, array[int]]
    _cr_ends: set[int | None]
    _message_started: bool
    _start_native: Any
    _content_since_start: bool
    _early: int | None
    _sequence: int | None
    _resumed: bool

    def _check_sequence(self, position: int, native: Any) -> None:
        seq = native.get("sequence_number") if isinstance(native, Mapping) else None
        if not isinstance(seq, int) or isinstance(seq, bool):
            return
        if self._resumed and self._sequence is not None:
            # The first event of a resumed connection must be the one after the first
            # connection's last: anything else lost events or delivered some twice.
            self._resumed = False
            if seq > self._sequence + 1:
                self._anomaly(position, R.RESUME_SEQUENCE_GAP, str(native.get("type")),
                              f"{seq} after {self._sequence}")
            elif seq <= self._sequence:
                self._anomaly(position, R.RESUME_SEQUENCE_OVERLAP, str(native.get("type")),
                              f"{seq} after {self._sequence}")
                self._sequence = seq
                return
        if self._sequence is not None and seq < self._sequence:  # a repeat is not a regress
            self._anomaly(position, R.SEQUENCE_NUMBER_REGRESSED, str(native.get("type")),
                          f"{seq} after {self._sequence}")
        self._sequence = seq

    def _check_grammar(self, position: int, obs: Observation, native: Any = None) -> None:
        """Content followed by the stream's own start frame is a frame of another stream
        (the T8 routing bug); a stream with no start frame at all (a resumed Responses
        stream, a hand-built fragment) proves nothing and is left to the other rules.

        The SAME start frame again (equal payload, so the same message id) before any
        content is that message's start delivered twice, not another message: the SDKs
        restart their snapshot on it and lose nothing, so it is not held.  A second start
        after content, or of another message, still is."""
        content = obs.kind in _CONTENT_KINDS or obs.kind.startswith("tool_call")
        if obs.kind == "message_start":
            if self._message_started:
                if self._content_since_start or native != self._start_native:
                    self._anomaly(position, R.SECOND_MESSAGE_START, obs.native_type)
            else:
                if self._early is not None:
                    self._anomaly(position, R.CONTENT_BEFORE_START, obs.native_type,
                                  f"content at #{self._early}")
                self._start_native = native
            self._message_started = True
        elif self._message_started:
            self._content_since_start = self._content_since_start or content
        elif self._early is None and content:
            self._early = position

    def _event_rules(self, position: int, frame: FrameReceived) -> None:
        """Seed 004's event contract over what the endpoint sent; the terminal's envelope
        is kept as sent (the first one: a second terminal is already a broken rule)."""
        native = frame.native if isinstance(frame.native, Mapping) else {}
        assert self.event_rules is not None
        code = self.event_rules.feed(frame.event_name, native.get("text"))
        if code is not None:
            self._anomaly(position, code, frame.event_name or "<unnamed>")
        elif frame.event_name in ("done", "error") and self.sent_envelope is None:
            self.sent_envelope = native

    def _anomaly(self, position: int, code: str, native_type: str,
                 detail: str | None = None) -> None:
        self.anomalies.append(Anomaly(position, code, native_type, detail))

    def _grapheme_splits(self) -> tuple[int, ...]:
        found: list[int] = []
        for block, text in self.texts.items():
            # ASCII's only multi-character cluster is CR LF, so an all-ASCII block without a
            # delta ending in CR cannot split one: skip that common case.
            ends = self.ends[block]
            if len(ends) > 1 and (not text.isascii() or block in self._cr_ends):
                positions = self.block_pos[block]
                found += [positions[i] for i in _broken_edges(text, ends)]
        return tuple(sorted(found))


def _broken_edges(text: str, ends: Sequence[int]) -> list[int]:
    """``graphemes.broken_boundaries`` of the deltas ending at ``ends`` in ``text``, read
    from the joined text: indexes ``i`` whose delta starts inside a grapheme cluster
    (empty deltas have no edge)."""
    edges = {ends[i - 1]: i for i in range(1, len(ends)) if ends[i] > ends[i - 1]}
    if not edges:
        return []
    position, inside = 0, set[int]()
    for cluster in clusters(text):
        inside.update(range(position + 1, position + len(cluster)))
        position += len(cluster)
    return sorted(index for edge, index in edges.items() if edge in inside)
