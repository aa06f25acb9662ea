"""Issue 25 item 4: the export's batched line writer is the per-line one (``_dump``) --
ASCII batches that skip the escaper included -- for every kind of unsafe character."""

from __future__ import annotations

import json

from tracestore.export.jsonl import _dump, _escaped_lines


def test_batched_lines_equal_the_per_line_writer() -> None:
    payloads = ["plain ascii", "tab\there", "del\x7fhere", "esc\x1b[31m", "csi\x9b",
                "bidi\u202eevil", "sep\u2028line", "lone\ud800surrogate", "é ü 中",
                "nul\x00", "cr\rlf\n"]
    rows = [{"event": {"position": n, "payload": p}}  # stored text keeps raw characters
            for n, p in enumerate(payloads)]
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    expected = "".join(_dump(r) for r in rows)
    assert _escaped_lines([encode(r) for r in rows]) == expected
    for row in rows:  # one line at a time too: the ASCII fast path alone
        assert _escaped_lines([encode(row)]) == _dump(row)
    assert "\x7f" not in expected and "\u202e" not in expected
