"""Shared parts of the proxy tests: a recording proxy in front of a fake upstream."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Iterator

from tracestore import Recorder
from tracestore.events import CaptureSegment, FrameReceived, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections.release import decide_release
from tracestore.proxy.app import proxy_app
from tracestore.proxy.server import RunningProxy
from tracestore.proxy.writer import ProxyRecording

from conftest import FIXTURES
from proxy_upstream import Upstream

REAL = FIXTURES / "real"
PARIS = json.loads((FIXTURES / "tasks" / "paris.json").read_text())
RESPONSES = REAL / "openai-responses" / "text-gpt-4o.sse"
CHAT = next(iter(sorted((REAL / "openai-chat").glob("*.sse"))))
ANTHROPIC = REAL / "anthropic" / "text-basic.sse"
GEMINI = REAL / "gemini" / "sse-text.sse"


class Setup:
    def __init__(self, db: Path, upstream: Upstream, recording: ProxyRecording,
                 proxy: RunningProxy, rec: Recorder) -> None:
        self.db, self.upstream, self.recording, self.proxy, self.rec = \
            db, upstream, recording, proxy, rec

    @property
    def url(self) -> str:
        return self.proxy.url

    def events(self, attempt_id: str) -> list:
        self.recording.flush()
        return self.rec.store.read(attempt_id=attempt_id)

    def decision(self, attempt_id: str):
        self.recording.flush()
        trace = self.rec.store.read(attempt_id=attempt_id)[0].trace_id
        return decide_release(self.rec.store.read(trace_id=trace), attempt_id)


@contextlib.contextmanager
def running(tmp_path: Path, *, routes: list[tuple[str, str]] | None = None,
            timeout: float = 10, **options: object) -> Iterator[Setup]:
    """A fake upstream, a SQLite store and a proxy in front of the upstream (``routes``:
    extra ``(prefix, url)`` pairs before the default route to the fake upstream; ``{upstream}``
    in a url stands for the fake upstream's)."""
    db = tmp_path / "proxy.db"
    with Upstream() as upstream, Recorder(f"sqlite:///{db}") as rec:
        recording = ProxyRecording(rec, task=TaskRule.model_validate(PARIS), **options)
        extra = [(p, u.replace("{upstream}", upstream.url)) for p, u in routes or []]
        app = proxy_app([*extra, ("", upstream.url)], recording, timeout=timeout)
        with RunningProxy(app) as proxy:
            yield Setup(db, upstream, recording, proxy, rec)
        recording.close()


def wait_for_drain(setup: Setup, attempt_id: str, seconds: float = 10) -> list:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        events = setup.events(attempt_id)
        if drains(events):
            return events
        time.sleep(0.02)
    raise AssertionError(f"attempt {attempt_id} never drained")


def frames_of(events: list) -> list[tuple]:
    out, segment = [], None
    for stored in events:
        event = stored.event
        if isinstance(event, CaptureSegment):
            segment = event
        elif isinstance(event, FrameReceived):
            out.append((event.index, event.native, event.kinds, segment.offset + event.offset))
    return out


def ingested(path: Path) -> tuple[list[tuple], object]:
    from tracestore.store.log import EventStore

    plan = plan_ingest(path.read_bytes(), filename=path.name, attempt_id="x", trace_id="x",
                       task=TaskRule.model_validate(PARIS))
    frames = [(e.event.index, e.event.native, e.event.kinds, e.event.offset)
              for e in plan.events if isinstance(e.event, FrameReceived)]
    with EventStore("sqlite://") as store:
        store.append(list(plan.events), blob_data=[plan.blob])
        return frames, decide_release(store.read(), "x")


def kinds(events: list) -> list[str]:
    return [e.type for e in events]


def drains(events: list) -> list[tuple[str, str | None]]:
    return [(e.event.outcome, e.event.detail) for e in events if e.type == "transport.drained"]


