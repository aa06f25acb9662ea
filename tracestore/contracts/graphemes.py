"""Grapheme clusters (UAX #29) for streamed text, via the maintained ``regex`` module's ``\\X``.

Reassembly by characters is always lossless (the deltas are slices of one string), but a
screen that draws each delta on its own shows a Bangla vowel sign, a combining accent or
half of an emoji ZWJ sequence with nothing to attach to.  Seed 004 counts such boundaries
(``broken_boundaries``); here the count is exact UAX #29, not an approximation.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any


@functools.cache
def _cluster_pattern() -> Any:
    # Compiled on first use: ``regex`` costs start-up time in every command that imports
    # the contracts (``release``), most of which never split text into clusters.
    import regex

    return regex.compile(r"\X")


def clusters(text: str) -> list[str]:
    """The extended grapheme clusters of ``text``."""
    found: list[str] = _cluster_pattern().findall(text)
    return found


def broken_boundaries(chunks: Sequence[str]) -> list[int]:
    """Indexes ``i`` where the boundary between ``chunks[i-1]`` and ``chunks[i]`` falls inside
    a grapheme cluster of the joined text (empty chunks are skipped: they have no edge)."""
    broken: list[int] = []
    offset = 0
    edges: dict[int, int] = {}
    for index, chunk in enumerate(chunks):
        if index and chunk:
            edges[offset] = index
        offset += len(chunk)
    if not edges:
        return broken
    position = 0
    inside: set[int] = set()
    for cluster in clusters("".join(chunks)):
        inside.update(range(position + 1, position + len(cluster)))
        position += len(cluster)
    return sorted(index for edge, index in edges.items() if edge in inside)


def chunk_clusters(text: str, size: int) -> list[str]:
    """Chunks of at most ``size`` characters that never split a cluster (a longer cluster
    is one chunk of its own)."""
    chunks: list[str] = []
    current = ""
    for cluster in clusters(text):
        if current and len(current) + len(cluster) > size:
            chunks.append(current)
            current = ""
        current += cluster
    return chunks + [current] if current else chunks
