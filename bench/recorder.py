"""Recording overhead: the same httpx2 client reading a real capture from a local server,
with and without the recording transport, in the same run (64 KiB reads).

Prints, per mode, the median wall time of one streamed request as the application sees it
(request to last chunk) and the median time to the first chunk, then the ratios
recorded / plain, and how long after the request the writer thread had recorded it all.  Never asserts:
figures depend on the machine (SQLite commits cost a disk sync each).

    .venv/bin/python bench/recorder.py [--rounds 20] [--capture PATH] [--db PATH]
        [--pace-ms MS --server-chunk BYTES] [--chat [--by-event]] [--writer thread]

``--writer`` is the transport's writer: ``thread`` (this bench's figures), ``process`` or
``auto`` (the package's default: the process writer for this SQLite file).

``--chat`` streams a Chat Completions capture through the real ``openai`` client
(``chat.completions.create(stream=True)`` iterated to the end: the SDK stops at ``[DONE]``
and closes the response), with and without the recording transport; ``--by-event`` makes
the server send one SSE event per chunk (the smallest chunks a provider sends).

By default the server sends the capture as fast as it can in 64 KiB chunks (the
application reads a burst: the case where recording competes hardest with it).
``--pace-ms 5 --server-chunk 2048`` paces the body as a provider generating tokens does.

Each round runs one plain and one recorded request, the order alternating between rounds
(whichever goes second finds the connection and the caches warm).  Besides the ratios it
prints the time to the first chunk as a difference, recorded − plain (median of the rounds'
differences, and the worst round): the goal is within 1 ms.  By default the writer is
flushed after each recorded request (it is idle when the next request starts);
``--no-flush`` does not, as an application does not: the writer then records the previous
response while the next one starts, competing with it for the interpreter.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the local capture server the SDK tests use

from capture_server import CaptureServer, route_for  # noqa: E402

CHUNK = 64 * 1024
DEFAULT_CAPTURE = REPO / "fixtures/real/openai-responses/reasoning-summary-o3-mini.sse"
CHAT_CAPTURE = REPO / "fixtures/real/openai-chat/tool-call-include-usage-gpt-4o-mini.sse"


def one_chat(client) -> tuple[float, float]:
    """One Chat Completions stream read through the openai SDK, as an application does."""
    start = time.perf_counter()
    first = None
    for _ in client.chat.completions.create(model="gpt-4o-mini", stream=True,
                                            messages=[{"role": "user", "content": "x"}]):
        if first is None:
            first = time.perf_counter() - start
    return time.perf_counter() - start, first or 0.0


def one_request(client, url: str) -> tuple[float, float]:
    start = time.perf_counter()
    first = None
    with client.stream("POST", url, json={"model": "o3-mini", "stream": True}) as response:
        for _ in response.iter_raw(CHUNK):
            if first is None:
                first = time.perf_counter() - start
    return time.perf_counter() - start, first or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--capture", type=Path, default=DEFAULT_CAPTURE)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--pace-ms", type=float, default=0.0,
                        help="server waits this long between chunks (default 0: a burst)")
    parser.add_argument("--server-chunk", type=int, default=CHUNK,
                        help="bytes per chunk the server sends (default 65536)")
    parser.add_argument("--chat", action="store_true",
                        help="Chat Completions through the openai client")
    parser.add_argument("--by-event", action="store_true",
                        help="the server sends one SSE event per chunk")
    parser.add_argument("--no-flush", action="store_true",
                        help="do not wait for the writer between requests")
    parser.add_argument("--writer", choices=("thread", "process", "auto"), default="thread",
                        help="the transport's writer (default: thread, as the figures in "
                             "docs/explanation/performance.md)")
    args = parser.parse_args()
    if args.chat and args.capture == DEFAULT_CAPTURE:
        args.capture = CHAT_CAPTURE

    import httpx2

    from tracestore import Recorder
    from tracestore.recording.httpx_capture import RecordingTransport

    folder = tempfile.mkdtemp(prefix="ts-bench-recorder-")
    db = args.db or Path(folder) / "bench.db"
    with CaptureServer() as server, Recorder(f"sqlite:///{db}") as rec:
        path = "/v1/chat/completions" if args.chat else "/v1/responses"
        server.routes[path] = route_for(args.capture, chunk=args.server_chunk,
                                        pace=args.pace_ms / 1000, by_event=args.by_event)
        url = f"{server.url}{path}"
        plain = httpx2.Client()
        counter = iter(range(10**9))
        # One trace per request, as one question per trace: a trace's decisions are judged
        # over its own events only.
        transport = RecordingTransport(lambda: rec.trace(f"bench-{next(counter)}"),
                                       writer=args.writer)
        recorded = httpx2.Client(transport=transport)
        if args.chat:
            import openai

            plain, recorded = (openai.OpenAI(api_key="bench", base_url=f"{server.url}/v1",
                                             max_retries=0, http_client=c)
                               for c in (plain, recorded))
            global one_request
            one_request = lambda client, _url: one_chat(client)  # noqa: E731
        times: dict[str, list[tuple[float, float]]] = {"plain": [], "recorded": []}
        one_request(plain, url), one_request(recorded, url)  # warm both paths
        settled: list[float] = []
        for n in range(args.rounds):  # interleaved, order alternating: drift hits both alike
            for mode in (("plain", "recorded") if n % 2 == 0 else ("recorded", "plain")):
                if mode == "plain":
                    times["plain"].append(one_request(plain, url))
                    continue
                start = time.perf_counter()
                times["recorded"].append(one_request(recorded, url))
                if not args.no_flush:
                    transport.flush()  # the writer finished recording this response
                    settled.append(time.perf_counter() - start)
        transport.flush()
        assert not transport.failures, transport.failures
    size = args.capture.stat().st_size
    print(f"capture {args.capture.name} ({size} bytes), {args.rounds} rounds, {CHUNK} B reads"
          + (" through openai chat.completions" if args.chat else "")
          + ("; server sends one SSE event per chunk" if args.by_event else
             f"; server sends {args.server_chunk} B chunks")
          + (f" every {args.pace_ms:g} ms" if args.pace_ms else " as fast as it can")
          + ("; writer not flushed between requests" if args.no_flush else ""))
    medians = {}
    for mode, samples in times.items():
        wall = statistics.median(s[0] for s in samples)
        first = statistics.median(s[1] for s in samples)
        medians[mode] = (wall, first)
        print(f"  {mode:9} wall {wall * 1000:8.2f} ms   first chunk {first * 1000:7.2f} ms")
    print(f"  ratio recorded/plain: wall {medians['recorded'][0] / medians['plain'][0]:.2f}x, "
          f"first chunk {medians['recorded'][1] / medians['plain'][1]:.2f}x")
    deltas = [(r[1] - p[1]) * 1000 for p, r in zip(times["plain"], times["recorded"])]
    print(f"  first chunk recorded - plain: median {statistics.median(deltas):+.2f} ms, "
          f"worst round {max(deltas):+.2f} ms")
    if settled:
        print(f"  recording settled (writer done) {statistics.median(settled) * 1000:.2f}"
              " ms after the request started: the store works behind the application")


if __name__ == "__main__":
    main()
