"""AWS event-stream decoding throughput against botocore, measured in the same run.

Prints, never asserts.  The six real Bedrock ConverseStream captures are concatenated and
repeated to ~20 MB.  Both decoders verify both CRCs and parse every header:

* ours: ``EventStreamDecoder.feed`` per chunk;
* botocore: ``EventStreamBuffer.add_data`` per chunk, then iterate the parsed messages
  (what ``botocore.eventstream.EventStream`` does on a live response).

Both get the same 64 KiB chunks (botocore re-slices its whole buffer after every
message, so feeding it 20 MB at once would measure that quadratic copy, not decoding).
Goal: ours / botocore >= 1.0.

Run:  pip install -e '.[bench]' && python bench/wire_eventstream.py [--megabytes 20]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from tracestore.wire import EventStreamDecoder

ROOT = Path(__file__).resolve().parent.parent
BEDROCK = ROOT / "fixtures" / "real" / "bedrock"
CHUNK = 64 * 1024


def ours(chunks: list[bytes]) -> int:
    decoder = EventStreamDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    return count + len(decoder.close())


def make_theirs() -> Callable[[list[bytes]], int] | None:
    try:
        from botocore.eventstream import EventStreamBuffer
    except ImportError:
        return None

    def theirs(chunks: list[bytes]) -> int:
        buffer = EventStreamBuffer()
        count = 0
        for chunk in chunks:
            buffer.add_data(chunk)
            for _ in buffer:
                count += 1
        return count

    return theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    one = b"".join(p.read_bytes() for p in sorted(BEDROCK.glob("*.bin")))
    data = one * max(1, int(args.megabytes * 1e6 / len(one)))
    chunks = [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)]
    print(f"{len(data) / 1e6:.1f} MB (6 Bedrock captures x{len(data) // len(one)}), "
          f"{CHUNK // 1024} KiB chunks, best of {args.repeat}")
    contenders: list[tuple[str, Callable[[list[bytes]], int], list[bytes]]] = [
        ("ours (64 KiB chunks)", ours, chunks), ("ours (whole input)", ours, [data])]
    theirs = make_theirs()
    if theirs is not None:
        contenders.append(("botocore EventStreamBuffer", theirs, chunks))
    best = {name: (float("inf"), 0) for name, _, _ in contenders}
    for _ in range(args.repeat):  # interleaved, so machine load hits everyone alike
        for name, func, feed in contenders:
            start = time.perf_counter()
            count = func(feed)
            elapsed = time.perf_counter() - start
            best[name] = min(best[name], (elapsed, count))
    for name, (elapsed, count) in best.items():
        print(f"   {name:27}: {count:,} messages in {elapsed:.3f} s = "
              f"{count / elapsed:,.0f} messages/s ({len(data) / elapsed / 1e6:.0f} MB/s)")
    if theirs is None:
        print("   botocore not installed: no baseline (pip install -e '.[bench]')")
        return
    ratio = best["botocore EventStreamBuffer"][0] / best["ours (64 KiB chunks)"][0]
    print(f"   ratio ours/botocore (messages/s): {ratio:.2f}  (goal >= 1.0)")


if __name__ == "__main__":
    main()
