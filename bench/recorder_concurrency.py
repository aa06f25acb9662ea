"""Recording cost at concurrency (issue 25 item 1): N streams at once through ONE shared
client and transport, as a web server holds them, against the same N streams through a
plain client, in the same run (rounds interleaved, so drift hits both alike).

    .venv/bin/python bench/recorder_concurrency.py [--streams 10 100] [--rounds 3]
        [--pace-ms 5] [--server-chunk 2048] [--capture PATH]

Per mode and N it prints the median wall time of a round (all N streams, request to last
chunk as the application sees it), the median time to the first chunk over every stream,
the ratios recorded / plain, and the store's transactions per recorded attempt.  Never
asserts: figures depend on the machine (each SQLite commit costs a disk sync).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the local capture server the SDK tests use

from capture_server import CaptureServer, route_for  # noqa: E402

DEFAULT_CAPTURE = REPO / "fixtures/real/openai-responses/reasoning-summary-o3-mini.sse"


def one_stream(client, url: str, firsts: list[float]) -> None:
    start = time.perf_counter()
    first = None
    with client.stream("POST", url, json={"model": "o3-mini", "stream": True}) as response:
        for _ in response.iter_raw(4096):
            if first is None:
                first = time.perf_counter() - start
    firsts.append(first or 0.0)


def one_round(client, url: str, streams: int, firsts: list[float]) -> float:
    threads = [threading.Thread(target=one_stream, args=(client, url, firsts))
               for _ in range(streams)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def run(streams: int, rounds: int, capture: Path, pace: float, chunk: int) -> None:
    import httpx2

    from tracestore import Recorder
    from tracestore.recording.httpx_capture import RecordingTransport

    from http.server import ThreadingHTTPServer

    # 100 connections at once: the default listen backlog (5) resets some of them, and a
    # reset stream's thread dies early, which made the round's wall time meaningless.
    ThreadingHTTPServer.request_queue_size = 1024
    folder = tempfile.mkdtemp(prefix="ts-bench-concurrency-")
    limits = httpx2.Limits(max_connections=streams + 10, max_keepalive_connections=streams)
    with CaptureServer() as server, Recorder(f"sqlite:///{Path(folder) / 'b.db'}") as rec:
        server.routes["/v1/responses"] = route_for(capture, chunk=chunk, pace=pace)
        url = f"{server.url}/v1/responses"
        counter = iter(range(10**9))
        plain = httpx2.Client(limits=limits, timeout=120)
        transport = RecordingTransport(lambda: rec.trace(f"q-{next(counter)}"),
                                       inner=httpx2.HTTPTransport(limits=limits))
        recorded = httpx2.Client(transport=transport, timeout=120)
        transactions = {"n": 0}
        for name in ("append_with", "append_groups"):
            original = getattr(rec.store, name)

            def counted(*a, _o=original, **k):
                transactions["n"] += 1
                return _o(*a, **k)
            setattr(rec.store, name, counted)
        walls: dict[str, list[float]] = {"plain": [], "recorded": []}
        firsts: dict[str, list[float]] = {"plain": [], "recorded": []}
        one_round(plain, url, 2, []), one_round(recorded, url, 2, [])  # warm both
        transport.flush()
        transactions["n"] = 0
        settled = []
        for _ in range(rounds):
            walls["plain"].append(one_round(plain, url, streams, firsts["plain"]))
            walls["recorded"].append(one_round(recorded, url, streams, firsts["recorded"]))
            start = time.perf_counter()
            transport.flush()
            settled.append(time.perf_counter() - start)
        assert not transport.failures, transport.failures
        attempts = rounds * streams
    wall = {m: statistics.median(v) for m, v in walls.items()}
    first = {m: statistics.median(v) for m, v in firsts.items()}
    print(f"{streams} concurrent streams, one shared transport, {rounds} rounds "
          f"({capture.name}, {chunk} B every {pace * 1000:g} ms)")
    for mode in ("plain", "recorded"):
        print(f"  {mode:9} round wall {wall[mode]:7.3f} s   first chunk median "
              f"{first[mode] * 1000:7.2f} ms")
    print(f"  ratio recorded/plain: wall {wall['recorded'] / wall['plain']:.3f}x; first chunk "
          f"{(first['recorded'] - first['plain']) * 1000:+.2f} ms; "
          f"{transactions['n'] / attempts:.2f} transactions per attempt; writer settled "
          f"{statistics.median(settled) * 1000:.0f} ms after the round")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--capture", type=Path, default=DEFAULT_CAPTURE)
    parser.add_argument("--pace-ms", type=float, default=5.0)
    parser.add_argument("--server-chunk", type=int, default=2048)
    args = parser.parse_args()
    for n in args.streams:
        run(n, args.rounds, args.capture, args.pace_ms / 1000, args.server_chunk)


if __name__ == "__main__":
    main()
