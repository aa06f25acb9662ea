"""The recorder's CPU per frame: what recording costs beside the traffic itself.

    .venv/bin/python bench/recorder_cost.py [--attempts 100] [--rounds 5]
        [--writer thread process] [--against main] [--capture PATH] [--chunk 2048]

The application's own call is timed: ``--attempts`` streams of the capture (cut into
``--chunk``-byte chunks), opened at once and read interleaved, chunk by chunk, through
``httpx2.Client(transport=RecordingTransport(factory, inner=MockTransport, writer=…))``,
then ``transport.flush()``.  The CPU of that (the application's process; with
``writer="process"`` the writer process's too, read from /proc) divided by the frames
recorded is the per-frame cost; the same loop through a plain client is the traffic's own.
A warm-up round goes first, so first-use imports and model builds are not counted.

``--against REF`` measures the same loop with the package as it is at git ``REF`` (its
``tracestore/`` exported to a temporary folder) in the same run, rounds interleaved with
this tree's, and prints the ratio.  Each measurement runs in a fresh interpreter.
Never asserts: figures depend on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # recorder_concurrency's capture server
sys.path.insert(0, str(REPO / "bench"))
from recorder_concurrency import child_cpu  # noqa: E402 - the same /proc reading

DEFAULT_CAPTURE = REPO / "fixtures/real/openai-responses/reasoning-summary-o3-mini.sse"
URL = "http://upstream.test/v1/responses"


def frames_in(capture: bytes) -> int:
    from tracestore.recording.stream import LiveCapture

    live = LiveCapture()
    return len(live.feed(capture).frames) + len(live.close().frames)


def worker(mode: str, attempts: int, rounds: int, capture: Path, chunk: int) -> None:
    """One measurement in this interpreter: prints one JSON line of CPU seconds per round."""
    import itertools

    import httpx2

    data = capture.read_bytes()
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)]

    class Body(httpx2.SyncByteStream):
        def __iter__(self):
            yield from chunks

    def handler(request):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               stream=Body())

    folder = tempfile.mkdtemp(prefix="ts-bench-cost-")
    inner = httpx2.MockTransport(handler)
    rec = transport = None
    if mode == "plain":
        transport = inner
    else:
        from tracestore import Recorder
        from tracestore.recording.httpx_capture import RecordingTransport

        rec = Recorder(f"sqlite:///{folder}/cost.db")
        counter = itertools.count()
        transport = RecordingTransport(lambda: rec.trace(f"q-{next(counter)}"), inner=inner,
                                       writer=mode)
    client = httpx2.Client(transport=transport)

    def one_round(n: int) -> None:
        managers = [client.stream("POST", URL, json={"model": "o3-mini", "stream": True})
                    for _ in range(n)]
        readers = [m.__enter__().iter_raw(4096) for m in managers]
        live = list(range(n))
        while live:
            still = []
            for i in live:
                try:
                    next(readers[i])
                    still.append(i)
                except StopIteration:
                    managers[i].__exit__(None, None, None)
            live = still
        getattr(transport, "flush", lambda: None)()

    one_round(min(attempts, 20))  # warm-up: imports, model builds, the writer started
    pid = getattr(getattr(transport, "process", None), "pid", None)
    cpus, children = [], []
    for _ in range(rounds):
        used, child_used = time.process_time(), child_cpu(pid)
        one_round(attempts)
        children.append(child_cpu(pid) - child_used)
        cpus.append(time.process_time() - used + children[-1])
    failures = getattr(transport, "failures", [])
    getattr(transport, "close", lambda: None)()
    if rec is not None:
        rec.close()
    import tracestore

    print(json.dumps({"cpus": cpus, "child": children, "frames": frames_in(data) * attempts,
                      "failures": len(failures), "package": tracestore.__file__}))


def export(ref: str) -> Path:
    """``tracestore/`` as it is at git ``ref``, in a temporary folder (for ``PYTHONPATH``)."""
    folder = Path(tempfile.mkdtemp(prefix="ts-bench-ref-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "tracestore"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def measure(source: Path | None, mode: str, args: argparse.Namespace) -> list[float]:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    out = subprocess.run(
        [sys.executable, __file__, "--worker", mode, "--attempts", str(args.attempts),
         "--rounds", "1", "--capture", str(args.capture), "--chunk", str(args.chunk)],
        check=True, capture_output=True, text=True, env=env,
        cwd=source or REPO).stdout  # (a ref's writer process imports from its folder)
    result = json.loads(out.strip().splitlines()[-1])
    expected = (source or REPO) / "tracestore" / "__init__.py"
    if Path(result["package"]).resolve() != expected.resolve():
        raise SystemExit(f"measured {result['package']}, not {expected}")
    if result["failures"]:
        raise SystemExit(f"{mode}: {result['failures']} recording failures")
    return [cpu / result["frames"] * 1e6 for cpu in result["cpus"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--capture", type=Path, default=DEFAULT_CAPTURE)
    parser.add_argument("--chunk", type=int, default=2048)
    parser.add_argument("--writer", nargs="+", choices=("thread", "process"),
                        default=["thread", "process"])
    parser.add_argument("--against", metavar="REF",
                        help="also measure the package as it is at this git ref")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.attempts, args.rounds, args.capture, args.chunk)
        return
    sources: dict[str, Path | None] = {"this tree": None}
    if args.against:
        sources[args.against] = export(args.against)
    modes = ["plain", *args.writer]
    per_frame: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):  # interleaved, so drift in the load hits all alike
        for name, source in sources.items():
            for mode in modes:
                if mode == "plain" and name != "this tree":
                    continue
                per_frame.setdefault((name, mode), []).extend(measure(source, mode, args))
    frames = frames_in(args.capture.read_bytes())
    print(f"{args.attempts} interleaved attempts of {args.capture.name} ({frames} frames, "
          f"{args.chunk} B chunks), median of {args.rounds} rounds; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    plain = statistics.median(per_frame[("this tree", "plain")])
    print(f"  plain client           {plain:7.2f} us CPU per frame")
    for mode in args.writer:
        mine = statistics.median(per_frame[("this tree", mode)])
        line = (f"  writer={mode:8} {'this tree':>10} {mine:7.2f} us CPU per frame "
                f"({mine / plain:.0f}x plain)")
        if args.against:
            theirs = statistics.median(per_frame[(args.against, mode)])
            line += (f";  {args.against}: {theirs:7.2f} us ({theirs / plain:.0f}x plain);"
                     f"  this tree / {args.against} = {mine / theirs:.2f}x")
        print(line)


if __name__ == "__main__":
    main()
