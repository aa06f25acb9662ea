"""A compact digest of an observation list: the facts a reviewer (and a test) asks first.

Why a separate, pure helper: the CLI, the fixture tests and the docs all want the same
answers — which text was assembled per block, which tool calls were made with which
authoritative arguments, how the stream ended, which errors came in-band — and computing
them in one place keeps those answers consistent.  Assembly concatenates ``text_delta``
only; ``final_text`` is reported separately for agreement checks and never appended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from tracestore.providers.observations import Observation


@dataclass(frozen=True)
class ToolCall:
    """One completed tool call (from its ``tool_call_done`` observation)."""

    tool_call_id: str | None
    name: str | None
    arguments: str | None


@dataclass(frozen=True)
class Summary:
    """What an observation list amounts to."""

    text_by_block: dict[int | None, str] = field(default_factory=dict)
    reasoning: str = ""
    final_texts: list[tuple[int | None, str]] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    terminals: list[Observation] = field(default_factory=list)
    errors: list[Observation] = field(default_factory=list)
    usage: list[Mapping[str, Any]] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)
    unknown: int = 0

    @property
    def text(self) -> str:
        """All assembled answer text in block order of first appearance."""
        return "".join(self.text_by_block.values())

    @property
    def terminal(self) -> Observation | None:
        """The last native terminal, if any."""
        return self.terminals[-1] if self.terminals else None


def summarize(observations: Iterable[Observation]) -> Summary:
    """Fold observations into a :class:`Summary` (pure, order-preserving)."""
    text_by_block: dict[int | None, str] = {}
    reasoning: list[str] = []
    final_texts: list[tuple[int | None, str]] = []
    tool_calls: list[ToolCall] = []
    terminals: list[Observation] = []
    errors: list[Observation] = []
    usage: list[Mapping[str, Any]] = []
    signatures: list[str] = []
    unknown = 0
    for obs in observations:
        if obs.kind == "text_delta" and obs.text:
            text_by_block[obs.block] = text_by_block.get(obs.block, "") + obs.text
        elif obs.kind == "reasoning_delta" and obs.text:
            reasoning.append(obs.text)
        elif obs.kind == "final_text" and obs.text is not None:
            final_texts.append((obs.block, obs.text))
        elif obs.kind == "tool_call_done":
            tool_calls.append(ToolCall(obs.tool_call_id, obs.tool_name, obs.arguments))
        elif obs.kind == "terminal":
            terminals.append(obs)
        elif obs.kind == "error":
            errors.append(obs)
        elif obs.kind == "usage" and obs.usage is not None:
            usage.append(obs.usage)
        elif obs.kind == "unknown":
            unknown += 1
        if obs.signature:
            signatures.append(obs.signature)
    return Summary(text_by_block, "".join(reasoning), final_texts, tool_calls, terminals, errors,
                   usage, signatures, unknown)


__all__ = ["Summary", "ToolCall", "summarize"]
