"""The frozen attempt view and its parts: what one stream attempt delivered, as data.

``AttemptFold`` (``tracestore.projections.attempt``) builds these; release, audit, review
and the report read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class BlockText:
    block: int | None
    text: str
    first_position: int
    last_position: int
    ends: tuple[int, ...]
    "Where each delta ends in ``text`` (characters): the deltas are slices of it."
    positions: tuple[int, ...] = ()
    "The log position of each delta (the audit's text as it stood at a Stop)."

    @property
    def deltas(self) -> tuple[str, ...]:
        """The delta fragments in arrival order (the audit looks for them in other
        answers), sliced from ``text`` when asked: the view holds a long answer once."""
        text, out, start = self.text, [], 0
        for end in self.ends:
            out.append(text[start:end])
            start = end
        return tuple(out)


@dataclass(frozen=True, slots=True)
class FinalTextCheck:
    """A source final text compared with the deltas (never appended to them)."""

    position: int
    native_type: str
    block: int | None
    agrees: bool
    duplicate: bool


@dataclass(frozen=True, slots=True)
class NativeTerminal:
    position: int
    native_type: str
    status: str | None
    stop_reason: str | None
    outcome: str
    "Classified under the profile: normal, limited, failed, tool, cancelled, refused, unknown."
    reason: str | None = None
    "The profile's reason code for a refused ending (``native_refusal``, ``prompt_blocked``)."


@dataclass(frozen=True, slots=True)
class NativeError:
    position: int
    name: str
    error_code: str | None
    message: str | None
    classification: str
    "failed (provider failure), exception (known) or unknown."


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A form outside the profile; ``code`` is a reason code from ``reasons``."""

    position: int
    code: str
    native_type: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Drain:
    position: int
    outcome: str
    detail: str | None


@dataclass(frozen=True, slots=True)
class AttemptView:
    attempt_id: str
    trace_id: str
    api: str
    reader: str | None
    retry_of: str | None
    profile: str | None
    started_at: int
    frames: int
    last_frame_position: int | None
    blocks: tuple[BlockText, ...]
    text: str
    "The candidate: text blocks joined in the order they first appeared."
    final_texts: tuple[FinalTextCheck, ...]
    terminals: tuple[NativeTerminal, ...]
    errors: tuple[NativeError, ...]
    anomalies: tuple[Anomaly, ...]
    stop_position: int | None
    drain: Drain | None
    usage: Mapping[str, Any] | None
    "The attempt's usage, combined per provider (``projections.usage``); None when absent."
    usage_position: int | None
    usage_positions: tuple[int, ...]
    "Every position whose usage record the value rests on (start and delta when merged)."
    superseded_at: int | None
    superseded_by: str | None
    structured: bool = False
    "The answer is a structured reply judged by an output contract."
    frame_failure: Anomaly | None = None
    "The first application frame that broke the profile's frame rules (seed 000)."
    binding_sha256: str | None = None
    "Digest of the request binding recorded for the trace; None when none was recorded."
    binding_checked: bool = False
    "Every frame's ``binding_sha256`` was compared with the recorded binding."
    sent_envelope: Mapping[str, Any] | None = None
    "The envelope an endpoint sent in its terminal event (seed 004), as sent."
    grapheme_splits: tuple[int, ...] = ()
    """Positions of text deltas that begin inside a grapheme cluster (UAX #29): a display
    hazard for a screen that draws deltas one by one; reassembly is unaffected."""

    @property
    def terminal(self) -> NativeTerminal | None:
        return self.terminals[0] if self.terminals else None
