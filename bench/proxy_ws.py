"""The recording proxy's WebSocket leg: per-message latency it adds to a realtime session.

A local WebSocket upstream (its own process) answers every message at once with one of its
own (a realtime transcript delta).  Three client connections, opened in one run and used
in turn, message by message: one through `tracestore proxy` (its own process, recording
into a SQLite file), one straight to the upstream, and a second straight one (the A/A
control: the noise floor of two identical paths).  A round trip crosses the proxy twice
(the client's message and the answer), so the added latency per message is half the
difference of the median round trips.

Prints (never asserts: figures depend on the machine) the median round trip of each path,
the added latency per message (the goal: <= 1 ms) and the A/A difference.

    .venv/bin/python bench/proxy_ws.py [--messages 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

UPSTREAM = """
import asyncio, json, sys
from websockets.asyncio.server import serve

DELTA = json.dumps({"type": "response.output_audio_transcript.delta", "event_id": "event_1",
                    "response_id": "resp_1", "item_id": "item_1", "output_index": 0,
                    "content_index": 0, "delta": " there"})

async def answer(ws):
    async for _ in ws:
        await ws.send(DELTA)

async def main():
    async with serve(answer, "127.0.0.1", int(sys.argv[1]), max_size=None):
        print("ready", flush=True)
        await asyncio.Future()

asyncio.run(main())
"""

CLIENT_MESSAGE = json.dumps({"type": "input_audio_buffer.append", "event_id": "evt_1",
                             "audio": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAgD4AAAB9AAACABAAZGF0YQAA"})


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port}")


async def _measure(urls: dict[str, str], messages: int) -> dict[str, list[float]]:
    from websockets.asyncio.client import connect

    conns = {name: await connect(url, max_size=None, compression=None)
             for name, url in urls.items()}
    times: dict[str, list[float]] = {name: [] for name in urls}
    try:
        for _ in range(50):  # warm-up
            for conn in conns.values():
                await conn.send(CLIENT_MESSAGE)
                await conn.recv()
        for i in range(messages):
            names = list(conns)
            names = names[i % len(names):] + names[:i % len(names)]  # rotate the order
            for name in names:
                conn = conns[name]
                start = time.perf_counter()
                await conn.send(CLIENT_MESSAGE)
                await conn.recv()
                times[name].append(time.perf_counter() - start)
    finally:
        for conn in conns.values():
            await conn.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    up_port, proxy_port = _port(), _port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            procs.append(subprocess.Popen([sys.executable, "-c", UPSTREAM, str(up_port)],
                                          stdout=subprocess.PIPE, text=True))
            _wait_listening(up_port)
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "tracestore", "proxy", "--upstream",
                 f"http://127.0.0.1:{up_port}", "--listen", f"127.0.0.1:{proxy_port}",
                 "--db", f"sqlite:///{tmp}/ws.db"], env=env, stderr=subprocess.DEVNULL))
            _wait_listening(proxy_port)
            urls = {"proxy": f"ws://127.0.0.1:{proxy_port}/v1/realtime",
                    "direct": f"ws://127.0.0.1:{up_port}/v1/realtime",
                    "direct-aa": f"ws://127.0.0.1:{up_port}/v1/realtime"}
            print(f"{args.messages} messages a path, {args.rounds} rounds "
                  "(round trip medians, ms)")
            for number in range(1, args.rounds + 1):
                times = asyncio.run(_measure(urls, args.messages))
                med = {name: statistics.median(values) * 1e3 for name, values in times.items()}
                added = (med["proxy"] - med["direct"]) / 2
                control = (med["direct-aa"] - med["direct"]) / 2
                print(f"round {number}: proxy {med['proxy']:.3f}  direct {med['direct']:.3f}  "
                      f"direct A/A {med['direct-aa']:.3f}  -> added per message "
                      f"{added:+.3f} ms (goal <= 1 ms), A/A {control:+.3f} ms")
        finally:
            for proc in reversed(procs):
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main()
