"""The attempt fold keeps a text block as one string grown in place (issue 24: a list of
every delta and their join held a long answer twice when the judge read it at the drain),
with the same view: deltas, positions and grapheme splits as before."""

from __future__ import annotations

import random
import sys
import tracemalloc
from pathlib import Path

from tracestore import Recorder
from tracestore.contracts.graphemes import broken_boundaries

sys.path.insert(0, str(Path(__file__).resolve().parent))
from long_stream import long_anthropic_stream  # noqa: E402

TEXTS = ["plain ascii words", "line\r\nbreaks\r\n\r\n", "e\u0301te\u0301 cafe\u0301",
         "\U0001F468\u200D\U0001F469\u200D\U0001F467 family \U0001F44D\U0001F3FD",
         "\u09AC\u09BE\u0982\u09B2\u09BE \u0995\u09BF", "mixed \r\n e\u0301 \U0001F1EB\U0001F1F7"]


def test_breaks_read_from_the_joined_text_equal_the_pieces_breaks() -> None:
    from tracestore.projections.attempt import _broken_edges

    rng = random.Random(24)
    for text in TEXTS:
        for _ in range(200):
            cuts = sorted(rng.randint(0, len(text)) for _ in range(rng.randint(0, 6)))
            bounds = [0, *cuts, len(text)]
            pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]  # empty ones too
            ends, at = [], 0
            for piece in pieces:
                at += len(piece)
                ends.append(at)
            assert _broken_edges(text, ends) == broken_boundaries(pieces), (text, pieces)


def test_the_drain_judges_a_long_answer_without_joining_it_again(tmp_path: Path) -> None:
    size = 4 << 20
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        attempt = rec.trace("t").attempt("a", api="anthropic-messages")
        for chunk in long_anthropic_stream(size, 1 << 20):
            attempt.feed(chunk)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            attempt.drain()
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        decided = attempt.decision()
        # The answer (4 MiB of 16 kB deltas) is judged as folded: the drain adds well under
        # one answer's size (the join of every delta added a whole copy).
        assert peak < size // 4, peak
        assert decided.status == "held"
