"""Recording cost at concurrency: N streams at once through ONE shared
client and transport, as a web server holds them, against the same N streams through a
plain client, in the same run (rounds interleaved in ABBA order, each started once the
upstream and the writer process are idle, so drift and order hit both alike).

    .venv/bin/python bench/recorder_concurrency.py [--streams 10 100] [--rounds 3]
        [--pace-ms 5] [--server-chunk 2048] [--capture PATH] [--server-in-process]
        [--writer thread process]

The upstream (a local server pacing a capture) runs in its own process by default, as a
provider does: in the application's process its pacing waits for the interpreter the
recorder's writer shares, so recording's CPU showed up as a slower upstream.
``--server-in-process`` is the old setting.

Per mode and N it prints the median wall time of a round (all N streams, request to last
chunk as the application sees it), the median time to the first chunk over every stream,
the ratios recorded / plain, the application process's CPU per round (the recording's
share of the interpreter), and the store's transactions per recorded attempt; and, as the
noise floor, the same ratios for a control: a second plain client built as the recorded one
is, recording nothing (with 100 threads on 2 cores the first chunk of two identical clients
differs by several ms from run to run).  Never asserts: figures depend on the machine
(each SQLite commit costs a disk sync).
"""

from __future__ import annotations

import argparse
import os
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


def serve_in_child(capture: Path, chunk: int, pace: float, conn) -> None:
    """The upstream in its own process: sends its URL, serves until told to stop."""
    from http.server import ThreadingHTTPServer

    ThreadingHTTPServer.request_queue_size = 1024
    with CaptureServer() as server:
        server.routes["/v1/responses"] = route_for(capture, chunk=chunk, pace=pace)
        conn.send(server.url)
        conn.recv()


class ChildServer:
    def __init__(self, capture: Path, chunk: int, pace: float) -> None:
        import multiprocessing

        self.conn, child = multiprocessing.Pipe()
        self.proc = multiprocessing.get_context("spawn").Process(
            target=serve_in_child, args=(capture, chunk, pace, child), daemon=True)

    def __enter__(self) -> ChildServer:
        self.proc.start()
        self.url = self.conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.send("stop")
        self.proc.join(10)


def one_round(client, url: str, streams: int, firsts: list[float],
              cpu: list[float] | None = None) -> float:
    threads = [threading.Thread(target=one_stream, args=(client, url, firsts))
               for _ in range(streams)]
    start, used = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if cpu is not None:
        cpu.append(time.process_time() - used)
    return time.perf_counter() - start


def child_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) the writer process used so far (Linux /proc)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(streams: int, rounds: int, capture: Path, pace: float, chunk: int,
        in_process: bool = False, writer: str = "thread") -> None:
    import httpx2

    from tracestore import Recorder
    from tracestore.recording.httpx_capture import RecordingTransport

    from http.server import ThreadingHTTPServer

    # 100 connections at once: the default listen backlog (5) resets some of them, and a
    # reset stream's thread dies early, which made the round's wall time meaningless.
    ThreadingHTTPServer.request_queue_size = 1024
    folder = tempfile.mkdtemp(prefix="ts-bench-concurrency-")
    limits = httpx2.Limits(max_connections=streams + 10, max_keepalive_connections=streams)
    upstream = CaptureServer() if in_process else ChildServer(capture, chunk, pace)
    with upstream as server, Recorder(f"sqlite:///{Path(folder) / 'b.db'}") as rec:
        if in_process:
            server.routes["/v1/responses"] = route_for(capture, chunk=chunk, pace=pace)
        url = f"{server.url}/v1/responses"
        counter = iter(range(10**9))
        plain = httpx2.Client(limits=limits, timeout=120)
        # the A/A control: a second plain client built as ``recorded`` is, with no recording
        control = httpx2.Client(transport=httpx2.HTTPTransport(limits=limits), timeout=120)
        transport = RecordingTransport(lambda: rec.trace(f"q-{next(counter)}"),
                                       inner=httpx2.HTTPTransport(limits=limits),
                                       writer=writer)
        recorded = httpx2.Client(transport=transport, timeout=120)
        transactions = {"n": 0}
        for name in ("append_with", "append_groups"):
            original = getattr(rec.store, name)

            def counted(*a, _o=original, **k):
                transactions["n"] += 1
                return _o(*a, **k)
            setattr(rec.store, name, counted)
        walls: dict[str, list[float]] = {"plain": [], "recorded": [], "control": []}
        firsts: dict[str, list[float]] = {"plain": [], "recorded": [], "control": []}
        cpus: dict[str, list[float]] = {"plain": [], "recorded": [], "control": []}
        for client in (plain, recorded, control):  # warm them all
            one_round(client, url, 2, [])
        transport.flush()
        transactions["n"] = 0
        settled: list[float] = []
        child: list[float] = []
        server_pid = getattr(getattr(upstream, "proc", None), "pid", None)

        def plain_round() -> None:
            walls["plain"].append(one_round(plain, url, streams, firsts["plain"],
                                            cpus["plain"]))

        def control_round() -> None:
            walls["control"].append(one_round(control, url, streams, firsts["control"],
                                              cpus["control"]))

        def recorded_round() -> None:
            used, child_used = time.process_time(), child_cpu(transport_pid(transport))
            walls["recorded"].append(one_round(recorded, url, streams, firsts["recorded"]))
            start = time.perf_counter()
            transport.flush()
            settled.append(time.perf_counter() - start)
            cpus["recorded"].append(time.process_time() - used)  # the round + its recording
            child.append(child_cpu(transport_pid(transport)) - child_used)

        modes = [plain_round, recorded_round, control_round]
        for n in range(rounds):
            # The order turns each round: the round that follows another round of N
            # streams starts while the upstream's handler threads of the last one wind
            # down, and its first chunks came ~30-80 ms later than the other's (measured by
            # swapping the order), so each mode takes each place; and every round starts
            # once the upstream and the writer process are idle.
            for mode in modes[n % 3:] + modes[:n % 3]:
                quiet(server_pid, transport_pid(transport))
                mode()
        assert not transport.failures, transport.failures
        transport.close()
        control.close()
        attempts = rounds * streams
    wall = {m: statistics.median(v) for m, v in walls.items()}
    first = {m: statistics.median(v) for m, v in firsts.items()}
    cpu = {m: statistics.median(v) for m, v in cpus.items()}
    where = "in this process" if in_process else "in its own process"
    print(f"{streams} concurrent streams, one shared transport, writer {writer}, {rounds} "
          f"rounds ({capture.name}, {chunk} B every {pace * 1000:g} ms, upstream {where}; "
          f"load average {os.getloadavg()[0]:.1f})")
    for mode in ("plain", "recorded", "control"):
        print(f"  {mode:9} round wall {wall[mode]:7.3f} s   first chunk median "
              f"{first[mode] * 1000:7.2f} ms   process CPU {cpu[mode]:6.3f} s"
              + ("  (round + recording it)" if mode == "recorded" else ""))
    if writer == "process":
        print(f"  writer process CPU {statistics.median(child):6.3f} s per round (niced, "
              "off the application's interpreter)")
    counted = f"{transactions['n'] / attempts:.2f} transactions per attempt" \
        if writer == "thread" else "transactions in the writer process (not counted)"
    print(f"  ratio recorded/plain: wall {wall['recorded'] / wall['plain']:.3f}x; first chunk "
          f"{(first['recorded'] - first['plain']) * 1000:+.2f} ms; {counted}; writer settled "
          f"{statistics.median(settled) * 1000:.0f} ms after the round")
    print(f"  noise floor (control, a second plain client, / plain): wall "
          f"{wall['control'] / wall['plain']:.3f}x; first chunk "
          f"{(first['control'] - first['plain']) * 1000:+.2f} ms")


def quiet(*pids: int | None, still: float = 0.1, limit: float = 10.0) -> None:
    """Wait until the processes ``pids`` used under 10 ms of CPU for ``still`` seconds."""
    deadline = time.monotonic() + limit
    last = sum(child_cpu(p) for p in pids)
    while time.monotonic() < deadline:
        time.sleep(still)
        now = sum(child_cpu(p) for p in pids)
        if now - last < 0.01:
            return
        last = now


def transport_pid(transport) -> int | None:
    process = getattr(transport, "process", None)
    return process.pid if process is not None else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--capture", type=Path, default=DEFAULT_CAPTURE)
    parser.add_argument("--pace-ms", type=float, default=5.0)
    parser.add_argument("--server-chunk", type=int, default=2048)
    parser.add_argument("--writer", nargs="+", choices=("thread", "process"),
                        default=["thread", "process"],
                        help="the recorder's writer: a thread in the application "
                             "(writer='thread') or a child process (writer='process', the "
                             "transport's default for a SQLite file); both by default, one "
                             "after the other")
    parser.add_argument("--server-in-process", action="store_true",
                        help="serve the upstream from this process (the old setting)")
    args = parser.parse_args()
    for n in args.streams:
        for writer in args.writer:
            run(n, args.rounds, args.capture, args.pace_ms / 1000, args.server_chunk,
                args.server_in_process, writer)


if __name__ == "__main__":
    main()
