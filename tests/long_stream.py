"""A long, valid Anthropic stream generated in chunks (never whole in memory): the bounded
memory test (tests/test_recording.py) and bench/recorder_memory.py record it."""

from __future__ import annotations

import json
from collections.abc import Iterator


def long_anthropic_stream(total: int, chunk: int) -> Iterator[bytes]:
    """A valid Anthropic stream of about ``total`` bytes of 16 KB text deltas, in chunks."""
    head = (b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x",'
            b'"id":"m","type":"message","role":"assistant","content":[],'
            b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            b'"content_block":{"type":"text","text":""}}\n\n')
    delta = ('event: content_block_delta\ndata: ' + json.dumps(
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "y" * 16000}}) + "\n\n").encode()
    tail = (b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
            b'event: message_delta\ndata: {"type":"message_delta","delta":'
            b'{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}\n\n'
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    buf = bytearray(head)
    for _ in range(total // len(delta)):
        buf += delta
        while len(buf) >= chunk:
            yield bytes(buf[:chunk])
            del buf[:chunk]
    yield bytes(buf + tail)
