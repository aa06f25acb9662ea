"""AWS event-stream decoding throughput against botocore, measured in the same run.

Prints, never asserts.  The six real Bedrock ConverseStream captures are concatenated and
repeated to ~20 MB.  Both decoders verify both CRCs and parse every header:

* ours: ``EventStreamDecoder.feed`` per chunk;
* botocore: ``EventStreamBuffer.add_data`` per chunk, then iterate the parsed messages
  (what ``botocore.eventstream.EventStream`` does on a live response).

Both get the same 64 KiB chunks (botocore re-slices its whole buffer after every
message, so feeding it 20 MB at once would measure that quadratic copy, not decoding).
Goal: ours / botocore >= 1.0.

Live-stream chunk sizes (``--live``): the same captures cut one message per
chunk (as a server flushes them) and into 1 B / 16 B / 64 B / 256 B / 1 KiB pieces, both
decoders on the same chunks.  Goal: ours / botocore >= 1.0 at every size >= 16 B.

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


LIVE_SIZES = (1, 16, 64, 256, 1024)


def per_message(data: bytes) -> list[bytes]:
    """One chunk per message (each message starts with its 4-byte total length)."""
    out, i = [], 0
    while i < len(data):
        size = int.from_bytes(data[i:i + 4], "big")
        out.append(data[i:i + size])
        i += size
    return out


def live(one: bytes, megabytes: float, repeat: int) -> None:
    theirs = make_theirs()
    if theirs is None:
        print("live chunk sizes: botocore not installed")
        return
    data = one * max(1, int(megabytes * 1e6 / len(one)))
    cuts = [("message", per_message(data))] + [
        (f"{n} B", [data[i:i + n] for i in range(0, len(data), n)]) for n in LIVE_SIZES]
    row = []
    for label, chunks in cuts:
        best = [float("inf"), float("inf")]
        for _ in range(repeat):
            for k, func in enumerate((ours, theirs)):
                start = time.perf_counter()
                func(chunks)
                best[k] = min(best[k], time.perf_counter() - start)
        row.append(f"{label} {best[1] / best[0]:4.2f}")
    print(f"live chunk sizes, {len(data) / 1e6:.1f} MB, best of {repeat} (ratio = ours / "
          "botocore messages per second, goal >= 1.0 from 16 B):")
    print("   " + "  ".join(row))
    # Still linear at a live size: 16-byte chunks of N and 2N bytes.
    half = data[:len(data) // 2]
    half = half[:sum(len(m) for m in per_message(half)[:-1])]  # whole messages only
    times = []
    for part in (half, half * 2):
        chunks = [part[i:i + 16] for i in range(0, len(part), 16)]
        best_time = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            ours(chunks)
            best_time = min(best_time, time.perf_counter() - start)
        times.append(best_time)
    print(f"   linear cost, 16-byte chunks: N={len(half):,} B {times[0]:.3f} s, 2N "
          f"{times[1]:.3f} s, ratio {times[1] / times[0]:.2f}  (goal <= 2 +-25%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--live", action="store_true", help="only the live chunk sizes")
    args = parser.parse_args()
    one = b"".join(p.read_bytes() for p in sorted(BEDROCK.glob("*.bin")))
    if args.live:
        live(one, min(args.megabytes, 2.0), args.repeat)
        return
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
    live(one, min(args.megabytes, 2.0), args.repeat)


if __name__ == "__main__":
    main()
