"""The recorder's writer thread: what one transport's attempts hand it, recorded in order.

``BodyRecording`` (``body``) queues each chunk the application received and each ending
here; the thread records them after the application's reads pause, so recording never
competes with the application for the interpreter while a burst arrives, and never lags
it by more than ``MAX_LAG_SECONDS``.
"""

from __future__ import annotations

import queue
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

#: Recorder operations (chunks) that may wait for the writer thread before a new chunk
#: blocks the application: bounds memory at QUEUE_ITEMS chunks when the store is slow.
QUEUE_ITEMS = 1024

#: The writer thread starts on queued chunks once the application's reads pause this long
#: (seconds): while a burst of chunks arrives, recording would compete with the
#: application's own thread for the interpreter and delay every chunk it reads.
QUIET_SECONDS = 0.02

#: ... but it never lags the application by more than this (seconds), so a process that
#: dies mid-stream has recorded all but at most this much of what it had received.
MAX_LAG_SECONDS = 0.25

#: Chunks of one attempt waiting next to each other in the queue are recorded as one
#: ``feed`` (one transaction) up to this many bytes: the same frames, fewer commits.
MERGE_BYTES = 1024 * 1024

_NOTHING: Any = object()


class Writer:
    """One thread that runs queued recorder work in order, holding ``lock`` around each."""

    def __init__(self, lock: Any, state_lock: Any) -> None:
        self.lock, self.state_lock = lock, state_lock
        self._queue: queue.Queue[tuple[Callable[[], Any], float] | None] = \
            queue.Queue(QUEUE_ITEMS)
        self._writer: threading.Thread | None = None
        self._last_put = 0.0
        self._urgent = threading.Event()

    def submit(self, work: Callable[[], Any]) -> None:
        """Queue recorder ``work`` for the writer thread (started on first use)."""
        with self.state_lock:
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                                name="tracestore-recorder")
                self._writer.start()
        self._last_put = now = time.monotonic()
        self._queue.put((work, now))  # blocks only when QUEUE_ITEMS wait (bounded memory)

    def _write_loop(self) -> None:
        carry = _NOTHING
        while True:
            item, carry = (self._queue.get() if carry is _NOTHING else carry), _NOTHING
            merged = 0
            try:
                if item is None:
                    return
                work, queued_at = item
                self._wait_for_a_pause(queued_at)
                if isinstance(work, Chunk):
                    work, carry, merged = self._merge(work)
                with self.lock:
                    work()
            except Exception as exc:  # noqa: BLE001 - a bug must not kill the writer silently
                warnings.warn(f"tracestore: recorder writer error {exc!r}", RuntimeWarning)
            finally:
                for _ in range(1 + merged):  # ``flush`` waits until these are recorded
                    self._queue.task_done()

    def _merge(self, first: Chunk) -> tuple[Chunk, Any, int]:
        """``first`` joined with the chunks of its attempt queued right after it; the item
        taken that did not fit (to run next, in order) and how many were joined."""
        pieces, size, merged = [first.data], len(first.data), 0
        while size < MERGE_BYTES:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None or not isinstance(item[0], Chunk) \
                    or item[0].attempt is not first.attempt:
                return Chunk(first.attempt, b"".join(pieces)), item, merged
            pieces.append(item[0].data)
            size += len(item[0].data)
            merged += 1
        return Chunk(first.attempt, b"".join(pieces)), _NOTHING, merged

    def _wait_for_a_pause(self, queued_at: float) -> None:
        """Hold back until the application's reads pause (``QUIET_SECONDS``), the oldest
        waiting chunk is ``MAX_LAG_SECONDS`` old, half the queue is full, or ``flush``."""
        while not self._urgent.is_set():
            now = time.monotonic()
            if (now - self._last_put >= QUIET_SECONDS or now - queued_at >= MAX_LAG_SECONDS
                    or self._queue.qsize() >= QUEUE_ITEMS // 2):
                return
            self._urgent.wait(QUIET_SECONDS / 4)

    def flush(self) -> None:
        """Wait until everything queued so far is recorded."""
        self._urgent.set()  # no point holding back: the caller is waiting
        try:
            self._queue.join()
        finally:
            self._urgent.clear()

    def stop(self) -> None:
        self.flush()
        if self._writer is not None and self._writer.is_alive():
            self._queue.put(None)
            self._writer.join(30)


class Chunk:
    """Bytes an attempt's application received, waiting for the writer."""

    __slots__ = ("attempt", "data")

    def __init__(self, attempt: Any, data: bytes) -> None:
        self.attempt, self.data = attempt, data

    def __call__(self) -> None:
        self.attempt.record(self.data)


__all__ = ["MAX_LAG_SECONDS", "MERGE_BYTES", "QUEUE_ITEMS", "QUIET_SECONDS", "Chunk",
           "Writer"]
