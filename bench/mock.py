"""``tracestore mock`` against Python's plain ``http.server`` serving the same bytes.

    python bench/mock.py [--streams 100] [--rounds 3] [--delay-ms 10]

Each round opens ``--streams`` concurrent requests (asyncio, raw sockets, so the client adds
the same small cost to both) to the mock and to a ``ThreadingHTTPServer`` that writes the
same capture in the same 256-byte chunks ``--delay-ms`` apart, and measures each stream's
time to first body byte and to its last byte.  Rounds interleave in turning order; an A/A
control (a second plain server, built the same way) prints the noise floor.  Goal: the
mock's median time to first byte within 2 ms of the plain server's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "fixtures" / "real" / "openai-chat" / "text-usage-moderation-gpt-5.sse"
CHUNK = 256


def plain_server(delay_s: float) -> ThreadingHTTPServer:
    data = CAPTURE.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for at in range(0, len(data), CHUNK):
                if at:
                    time.sleep(delay_s)
                piece = data[at:at + CHUNK]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True

    class Server(ThreadingHTTPServer):
        request_queue_size = 1024  # (listen's backlog: 100 clients connect at once)
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def one_stream(port: int) -> tuple[float, float]:
    body = b'{"model":"gpt-5","stream":true,"messages":[]}'
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                 b"content-type: application/json\r\ncontent-length: %d\r\n"
                 b"connection: close\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n", 1)[0], head
    await reader.read(1)  # the first body byte (a chunk size line)
    first = time.perf_counter() - started
    while await reader.read(65536):
        pass
    writer.close()
    return first, time.perf_counter() - started


async def round_of(port: int, streams: int) -> list[tuple[float, float]]:
    return list(await asyncio.gather(*(one_stream(port) for _ in range(streams))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=10.0)
    args = parser.parse_args()
    from tracestore.mock import RunningMock

    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.json"
        exchange = {"path": "/v1/chat/completions", "capture": str(CAPTURE),
                    "faults": {"chunk_bytes": CHUNK, "delay_ms": args.delay_ms}}
        scenario.write_text(json.dumps(
            {"exchanges": [exchange] * (args.streams * args.rounds)}))
        plain, control = plain_server(args.delay_ms / 1000), plain_server(args.delay_ms / 1000)
        with RunningMock(scenario) as mock:
            ports = {"mock": int(mock.url.rsplit(":", 1)[1]),
                     "plain http.server": plain.server_address[1],
                     "plain (A/A control)": control.server_address[1]}
            results: dict[str, list[tuple[float, float]]] = {name: [] for name in ports}
            order = list(ports)
            for n in range(args.rounds):
                for name in order[n % 3:] + order[:n % 3]:  # turning order
                    results[name] += asyncio.run(round_of(ports[name], args.streams))
                    time.sleep(0.3)
        plain.shutdown()
        control.shutdown()
    medians = {name: statistics.median(f for f, _ in rows) * 1000
               for name, rows in results.items()}
    print(f"{args.streams} concurrent paced streams x {args.rounds} rounds "
          f"({CAPTURE.stat().st_size} bytes each, {CHUNK}-byte writes {args.delay_ms:g} ms apart)")
    for name, rows in results.items():
        firsts = sorted(f for f, _ in rows)
        lasts = sorted(t for _, t in rows)
        print(f"  {name:<22} first byte median {medians[name]:7.2f} ms  p95 "
              f"{firsts[int(len(firsts) * 0.95)] * 1000:7.2f} ms   whole stream median "
              f"{statistics.median(lasts) * 1000:7.1f} ms")
    noise = abs(medians["plain http.server"] - medians["plain (A/A control)"])
    gap = medians["mock"] - medians["plain http.server"]
    print(f"mock - plain, first byte median: {gap:+.2f} ms (goal <= +2 ms); A/A noise floor "
          f"{noise:.2f} ms")


if __name__ == "__main__":
    main()
