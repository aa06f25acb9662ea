"""The proxy's recording side: one writer thread records every stream through ``Recorder``.

The event loop that forwards bytes never touches the database.  It hands each forwarded
chunk (and each ending) to :class:`ProxyRecording`, which queues it for one writer thread;
the writer calls the public recorder API (``trace.attempt``, ``feed``, ``stop``, ``drain``,
``destination``) in the order the event loop queued the work, each call its own short
transaction.  So:

* no database transaction is ever held across a network wait (the writer only records
  bytes already forwarded);
* a database failure never breaks the client's stream: a ``TracestoreError`` (or any
  other exception) in the writer ends the recording of that attempt only, is kept on
  ``failures`` and logged; the bytes keep flowing;
* memory per stream is bounded: the bytes queued but not yet recorded are counted per
  stream; past ``max_backlog`` in memory a stream's further chunks are spilled to a
  temporary file (``os.pwrite`` by a spill thread, ``os.pread`` by the writer; at most
  ``max_spill`` bytes a stream), so a burst is forwarded at full speed and recorded after
  it; only past both bounds does the forwarding side wait (``StreamRecord.backpressure``),
  for at most ``backlog_wait`` seconds, after which that attempt's recording is given up
  (``recording_lagged``) rather than the client's stream stalled.

The writer holds back while chunks keep arriving (``quiet`` seconds, at most ``max_lag``
behind) and joins queued chunks of one stream into one ``feed``: recording runs Python and
would otherwise compete with the forwarding for the interpreter on every chunk.  ``quiet``
is 25 ms, several scheduler time slices: on a busy machine the event loop is often off the
CPU for 5 ms in the middle of a burst, and a writer that took that for the burst's end
recorded (at ~15 ms of CPU per MiB) while the bytes were still being forwarded.
"""

from __future__ import annotations

import collections
import logging
import os
import tempfile
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from tracestore.errors import StoreError, TracestoreError

log = logging.getLogger("tracestore.proxy")

#: Queued chunks of one stream joined into one ``feed`` (one transaction) up to this size.
MERGE_BYTES = 1024 * 1024


class StreamRecord:
    """One forwarded response being recorded: what the event loop tells the writer."""

    def __init__(self, owner: ProxyRecording, *, trace_id: str, attempt_id: str,
                 retry_of: str | None, api: str, framing: str | None,
                 settings: dict[str, Any]) -> None:
        self.owner = owner
        self.trace_id, self.attempt_id, self.retry_of = trace_id, attempt_id, retry_of
        self.api, self.framing, self.settings = api, framing, settings
        self.attempt: Any = None
        "The ``AttemptRecorder`` (set by the writer when the attempt is opened)."
        self.dead = False
        self.ended = False
        self.forwarded = 0
        "Bytes handed to the client so far."
        self.backlog = 0
        "Bytes queued for the writer in memory, not recorded yet (under the owner's lock)."
        self.spill_backlog = 0
        "Bytes queued in the spill file, not recorded yet (guarded likewise)."
        self.spilled = 0
        "Bytes ever written to the spill file (its size)."
        self._spill: Any = None
        self._spill_lock = threading.Lock()
        self.spill_closed = False
        self.decode: Callable[[bytes], bytes] | None = None
        "Run by the writer on each fed piece (the raw path: the chunked framing removed)."
        self.outcome: str | None = None
        "The drain recorded (``clean``, ``eof``, ``reset``, ``error``), once recorded."
        self.done = threading.Event()
        owner.remember(self)

    # -- called from the event loop ------------------------------------------------------
    def open(self) -> None:
        self.owner.submit(self, "open", None)

    def received(self, chunk: bytes, body: int | None = None) -> None:
        """``chunk`` was forwarded to the client: record it (behind the client).  ``body``:
        the body bytes in it when it still has its framing (``decode`` removes it)."""
        self.forwarded += len(chunk) if body is None else body
        if self.dead or not chunk:
            return
        owner = self.owner
        if self.backlog + len(chunk) > owner.max_backlog \
                and self.spill_backlog + len(chunk) <= owner.max_spill:
            owner.submit(self, "feed", self._spilled(chunk))
            return
        owner.submit(self, "feed", chunk)

    def _spilled(self, chunk: bytes) -> _Spilled:
        """Queue ``chunk`` for this stream's spill file at the next offset.  The spill thread
        writes it (the event loop makes no system call for it) and then lets the chunk go;
        until then the writer takes the chunk itself.  Only when more than
        ``max_spill_pending`` bytes of all streams wait for the spill thread is the chunk
        written here, on the event loop (bounded memory before speed)."""
        piece = _Spilled(self.spilled, len(chunk), chunk)
        self.spilled += len(chunk)
        self.owner.spiller.put(self, piece)
        return piece

    def write_spilled(self, piece: _Spilled) -> None:
        """Write ``piece`` to the spill file (the spill thread, or the event loop when the
        spill thread is that far behind); a stream already ended drops it."""
        chunk = piece.chunk
        with self._spill_lock:
            if self.spill_closed or chunk is None:
                return
            if self._spill is None:
                # the file lives as long as the stream and is closed with it (close_spill)
                self._spill = tempfile.TemporaryFile(prefix="tracestore-proxy-",  # noqa: SIM115
                                                     dir=self.owner.spill_dir)
            os.pwrite(self._spill.fileno(), chunk, piece.at)
        piece.chunk = None  # written: read back from the file from now on

    def read_spilled(self, piece: _Spilled) -> bytes:
        """The writer's read of a spilled chunk: the chunk itself while the spill thread has
        not written it yet, else the file's bytes (written before the chunk was let go)."""
        chunk = piece.chunk
        if chunk is not None:
            piece.chunk = None  # recorded: the spill thread need not write it any more
            return chunk
        return os.pread(self._spill.fileno(), piece.size, piece.at)

    def close_spill(self) -> None:
        with self._spill_lock:
            self.spill_closed = True
            spill, self._spill = self._spill, None
        if spill is not None:
            spill.close()

    async def backpressure(self) -> None:
        """Wait while this stream's unrecorded bytes exceed the bound (bounded memory)."""
        owner = self.owner
        if self.backlog <= owner.max_backlog or self.dead:
            return
        import asyncio

        deadline = time.monotonic() + owner.backlog_wait
        owner.urgent.set()
        while self.backlog > owner.max_backlog and not self.dead:
            if time.monotonic() >= deadline:
                self.owner.give_up(self, StoreError(
                    f"the store fell more than {owner.max_backlog} bytes behind attempt "
                    f"{self.attempt_id!r} for {owner.backlog_wait:g} s; its recording stops, "
                    "the client's stream goes on", code="recording_lagged",
                    attempt_id=self.attempt_id))
                return
            await asyncio.sleep(0.002)

    def upstream_ended(self) -> None:
        """The upstream body ended and every byte was forwarded: drain as the bytes show."""
        self._end("ended", None)

    def upstream_broke(self, exc: BaseException, *, reset: bool) -> None:
        detail = f"{type(exc).__name__}: {exc}"[:500]
        self._end("broke", ("reset" if reset else "error", detail))

    def client_gone(self) -> None:
        """The client disconnected; the proxy closed the upstream request.  Before the
        native terminal this is the client's Stop at the bytes forwarded; after it, a
        clean end (decided by the writer, which has fed every forwarded byte by then)."""
        self._end("gone", self.forwarded)

    def _end(self, kind: str, payload: Any) -> None:
        if self.ended:
            return
        self.ended = True
        self.owner.submit(self, kind, payload)

    # -- run by the writer ---------------------------------------------------------------
    def run(self, kind: str, payload: Any) -> None:
        if kind == "open":
            trace = self.owner.trace(self.trace_id)
            self.attempt = trace.attempt(self.attempt_id, api=self.api, framing=self.framing,
                                         retry_of=self.retry_of, request=self.settings,
                                         reader=f"proxy:{self.attempt_id}")
        elif kind == "feed":
            self.attempt.feed(payload if self.decode is None else self.decode(payload))
        elif kind == "ended":
            self.outcome = self._drain()
        elif kind == "broke":
            self.outcome = self._drain(*payload)
        elif kind == "gone":
            if self.attempt.capture.terminal_seen:
                self.outcome = self._drain(
                    "clean", "client closed the connection after the native terminal; the "
                    "proxy closed the upstream request")
            else:
                self.attempt.stop(by="client")
                self.outcome = self._drain(
                    "eof", f"client disconnected after {payload} bytes, before the native "
                    "terminal; the proxy closed the upstream request")

    def _drain(self, outcome: str | None = None, detail: str | None = None) -> str:
        if not self.attempt.started and self.attempt.api is None:
            # No byte told the API (an empty or non-stream body): nothing can be recorded.
            return "none"
        return self.attempt.drain(outcome, detail)


class ProxyRecording:
    """The writer thread and what it shares: the recorder, the traces, the failures."""

    def __init__(self, recorder: Any, *, task: Any = None, max_backlog: int = 8 << 20,
                 backlog_wait: float = 5.0, quiet: float = 0.025, max_lag: float = 0.25,
                 keep_attempts: int = 4096, max_spill: int = 1 << 30,
                 spill_dir: str | None = None, max_spill_pending: int = 8 << 20) -> None:
        self.recorder, self.task = recorder, task
        self.max_backlog, self.backlog_wait = max_backlog, backlog_wait
        self.max_spill, self.spill_dir = max_spill, spill_dir
        self.spiller = _Spiller(max_spill_pending)
        self.quiet, self.max_lag = quiet, max_lag
        self.keep_attempts = keep_attempts
        self.failures: list[TracestoreError] = []
        self.sessions: list[Any] = []
        "What each recorded WebSocket session wrote (``RunsIngested``), in order."
        self.attempts: collections.OrderedDict[str, StreamRecord] = collections.OrderedDict()
        self._traces: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._queue: collections.deque[tuple[Any, str, Any, float]] = collections.deque()
        self._cond = threading.Condition()
        self._last_put = 0.0
        self.urgent = threading.Event()
        self._closing = False
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name="tracestore-proxy-writer")
        self._thread.start()

    # -- queueing ------------------------------------------------------------------------
    def submit(self, record: Any, kind: str, payload: Any) -> None:
        with self._cond:
            if kind == "feed":
                if payload.__class__ is _Spilled:
                    record.spill_backlog += payload.size
                else:
                    record.backlog += len(payload)
            self._last_put = now = time.monotonic()
            self._queue.append((record, kind, payload, now))
            self._cond.notify()

    def call(self, work: Callable[[], Any]) -> Future:
        """Run ``work`` in the writer, in order after everything queued; a future of it."""
        future: Future = Future()
        self.urgent.set()
        self.submit(_Call(work, future), "call", None)
        return future

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until everything queued so far is recorded (tests, shutdown)."""
        self.call(lambda: None).result(timeout)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._cond:
                self._closing = True
                self._cond.notify()
            self._thread.join(30)
            self.spiller.close()

    # -- the writer ----------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                if not _await_work(self):
                    return
            self._hold_back()
            with self._cond:
                record, kind, payload, _ = self._queue.popleft()
                if kind == "feed":
                    payload = self._merge(record, payload)
                if not self._queue:
                    self.urgent.clear()
            if kind == "feed":  # spilled pieces are read outside the lock
                payload = self._joined(record, payload)
            self._run(record, kind, payload)

    def _hold_back(self) -> None:
        """Wait while chunks keep arriving (at most ``max_lag`` behind the oldest)."""
        while not self.urgent.is_set():
            with self._cond:
                if not self._queue:
                    return
                oldest = self._queue[0][3]
            now = time.monotonic()
            if now - self._last_put >= self.quiet or now - oldest >= self.max_lag:
                return
            self.urgent.wait(self.quiet / 2)

    def _merge(self, record: Any, first: Any) -> list[Any]:
        """``first`` and the chunks of its stream queued right after it (bytes, or
        ``_Spilled`` pieces of the stream's spill file), taken off the backlogs."""
        pieces, size = [first], _size(first)
        while self._queue and size < MERGE_BYTES:
            nxt, kind, payload, _ = self._queue[0]
            if nxt is not record or kind != "feed":
                break
            self._queue.popleft()
            pieces.append(payload)
            size += _size(payload)
        spilled = sum(p.size for p in pieces if p.__class__ is _Spilled)
        record.backlog -= size - spilled
        record.spill_backlog -= spilled
        return pieces

    @staticmethod
    def _joined(record: Any, pieces: list[Any]) -> bytes:
        if record.dead:
            return b""
        if len(pieces) == 1 and pieces[0].__class__ is not _Spilled:
            return pieces[0]
        return b"".join(record.read_spilled(p) if p.__class__ is _Spilled else p
                        for p in pieces)

    def _run(self, record: Any, kind: str, payload: Any) -> None:
        if isinstance(record, _Call):
            record.run()
            return
        try:
            if not record.dead:
                record.run(kind, payload)
        except TracestoreError as exc:
            self.give_up(record, exc)
        except Exception as exc:  # noqa: BLE001 - the writer must outlive any one attempt
            self.give_up(record, StoreError(f"recording failed: {type(exc).__name__}: {exc}",
                                            code="recording_failed"))
        finally:
            if kind in ("ended", "broke", "gone"):
                record.close_spill()
                record.done.set()

    def give_up(self, record: StreamRecord, exc: TracestoreError) -> None:
        if record.dead:
            return
        record.dead = True
        self.failures.append(exc)
        log.warning("recording of attempt %s stopped (%s: %s); the client's stream is "
                    "unaffected", record.attempt_id, exc.code, exc.message)

    # -- traces (writer thread) and attempts ---------------------------------------------
    def trace(self, trace_id: str) -> Any:
        trace = self._traces.pop(trace_id, None)
        if trace is None:
            trace = self.recorder.trace(trace_id, task=self.task, origin="live recording (tracestore proxy)")
        self._traces[trace_id] = trace
        while len(self._traces) > self.keep_attempts:
            self._traces.popitem(last=False)
        return trace

    def remember(self, record: StreamRecord) -> None:
        """Keep the latest ``keep_attempts`` streams by id (the destination endpoint)."""
        with self._cond:
            self.attempts[record.attempt_id] = record
            while len(self.attempts) > self.keep_attempts:
                self.attempts.popitem(last=False)


class _Spilled:
    """A forwarded chunk kept in its stream's spill file: ``size`` bytes at ``at``;
    ``chunk`` holds the bytes until the spill thread has written them."""

    __slots__ = ("at", "size", "chunk")

    def __init__(self, at: int, size: int, chunk: bytes | None) -> None:
        self.at, self.size, self.chunk = at, size, chunk


class _Spiller:
    """The thread that writes spilled chunks to their streams' files, in the order queued,
    so the event loop forwarding a burst never waits for the disk."""

    def __init__(self, max_pending: int) -> None:
        self.max_pending = max_pending
        self.pending = 0
        "Bytes queued and not yet written (the event loop's reads and the thread's writes)."
        self._queue: collections.deque[tuple[StreamRecord, _Spilled]] = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False

    def put(self, record: StreamRecord, piece: _Spilled) -> None:
        with self._cond:
            if self.pending + piece.size > self.max_pending:
                spill_here = True
            else:
                spill_here = False
                self.pending += piece.size
                self._queue.append((record, piece))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, daemon=True,
                                                    name="tracestore-proxy-spill")
                    self._thread.start()
                self._cond.notify()
        if spill_here:
            _write(record, piece)

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not _await_work(self):
                    return
                record, piece = self._queue.popleft()
            try:
                _write(record, piece)
            finally:
                with self._cond:
                    self.pending -= piece.size

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(30)


def _await_work(owner: Any) -> bool:
    """Under ``owner._cond``: wait until ``owner._queue`` holds work (True), or the owner is
    closing with none left (False)."""
    while not owner._queue and not owner._closing:
        owner._cond.wait()
    return bool(owner._queue)


def _write(record: StreamRecord, piece: _Spilled) -> None:
    try:
        record.write_spilled(piece)
    except OSError as exc:  # a full disk: the piece keeps its chunk for the writer
        log.warning("spilling a chunk of attempt %s failed (%s); it stays in memory",
                    record.attempt_id, exc)


def _size(piece: Any) -> int:
    return piece.size if piece.__class__ is _Spilled else len(piece)


class _Call:
    def __init__(self, work: Callable[[], Any], future: Future) -> None:
        self.work, self.future = work, future
        self.dead = False

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            self.future.set_result(self.work())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            self.future.set_exception(exc)


__all__ = ["MERGE_BYTES", "ProxyRecording", "StreamRecord"]
