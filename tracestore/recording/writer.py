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

#: Queued items one batch takes at most: everything queued while the application read,
#: however many attempts it interleaves, goes into one transaction (one commit, one sync).
BATCH_ITEMS = QUEUE_ITEMS

_local = threading.local()


def current_batch() -> Batch | None:
    """The batch the writer thread is running on this thread (None elsewhere): an
    ``AttemptRecorder`` hands its appends to it instead of committing each."""
    return getattr(_local, "batch", None)


class Writer:
    """One thread that runs queued recorder work in order, holding ``lock`` around each."""

    def __init__(self, lock: Any, state_lock: Any) -> None:
        """``lock`` is held while a batch runs and commits; ``state_lock`` only briefly."""
        self.lock, self.state_lock = lock, state_lock
        self._queue: queue.Queue[tuple[Callable[[], Any], float] | None] = \
            queue.Queue(QUEUE_ITEMS)
        self._writer: threading.Thread | None = None
        self._last_put = 0.0
        self._urgent = threading.Event()
        self.batches = 0
        "Batches run."
        self.commits = 0
        "Transactions the batches committed for frames and facts (decisions not counted)."
        self.on_failure: Callable[[Any, Exception], None] = lambda _attempt, _exc: None
        "Told of an ``AttemptRecorder`` whose batched append the store refused."

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
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.task_done()
                return
            items, stop = [item], False
            try:
                self._wait_for_a_pause(item[1])
                while len(items) < BATCH_ITEMS:  # everything queued meanwhile: one batch
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        stop = True
                        break
                    items.append(more)
                self._run_batch([work for work, _ in items])
            except Exception as exc:  # noqa: BLE001 - a bug must not kill the writer silently
                warnings.warn(f"tracestore: recorder writer error {exc!r}", RuntimeWarning)
            finally:
                for _ in range(len(items) + stop):  # ``flush`` waits until these are recorded
                    self._queue.task_done()
            if stop:
                return

    def _run_batch(self, works: list[Callable[[], Any]]) -> None:
        """Run ``works`` in order, their appends collected into ONE transaction."""
        from tracestore.store.bulk import paused_gc

        batch = Batch()
        with self.lock, paused_gc():
            _local.batch = batch
            try:
                for work in group_chunks(works):
                    if _opens_a_retry(work):
                        batch.settle()  # the retry's start checks the log for the old
                    try:
                        work()
                    except Exception as exc:  # noqa: BLE001 - as above: the next goes on
                        warnings.warn(f"tracestore: recorder writer error {exc!r}",
                                      RuntimeWarning)
            finally:
                _local.batch = None
            failures = batch.commit()
        self.batches += 1
        self.commits += batch.commits
        for attempt, error in failures:
            self.on_failure(attempt, error)

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


def _opens_a_retry(work: Any) -> bool:
    """Does ``work`` open an attempt that may retry an earlier one of the same trace?"""
    if not isinstance(work, Chunk) or getattr(work.attempt, "recorder", True) is not None:
        return False
    owner = getattr(work.attempt, "owner", None)
    opens_a_retry = getattr(owner, "opens_a_retry", None)
    if callable(opens_a_retry):  # the writer process's transport
        return bool(opens_a_retry(work.attempt))
    # A transport given one trace retries within it; a factory opens a fresh trace each time.
    return owner is None or not callable(owner.trace) and bool(getattr(owner, "_last", True))


def group_chunks(works: list[Callable[[], Any]]) -> list[Callable[[], Any]]:
    """``works`` with each attempt's chunks joined between barriers, in order.

    A barrier is an attempt's ending (a closure) or the chunk that opens an attempt: the
    chunks queued before it are recorded before it, so a retry's start still comes after
    everything the application had received from the old attempt (T8), and an ending after
    its own bytes.  Between barriers, chunks of different attempts are independent facts;
    each attempt's are joined (in their order) up to ``MERGE_BYTES``.
    """
    out: list[Callable[[], Any]] = []
    pieces: dict[Any, list[bytes]] = {}
    sizes: dict[Any, int] = {}
    seen: set[int] = set()

    def close() -> None:
        out.extend(Chunk(attempt, b"".join(parts)) for attempt, parts in pieces.items())
        pieces.clear()
        sizes.clear()

    for work in works:
        if not isinstance(work, Chunk):
            close()
            out.append(work)
            continue
        attempt = work.attempt
        if id(attempt) not in seen:
            seen.add(id(attempt))
            if getattr(attempt, "recorder", True) is None:
                close()  # it opens its attempt: everything before it first
        pieces.setdefault(attempt, []).append(work.data)
        sizes[attempt] = sizes.get(attempt, 0) + len(work.data)
        if sizes[attempt] >= MERGE_BYTES:
            out.append(Chunk(attempt, b"".join(pieces.pop(attempt))))
            del sizes[attempt]
    close()
    return out


class Batch:
    """The appends of one writer batch, committed together (``EventStore.append_groups``).

    Decisions are planned from the log, which must hold the facts first.  Where one may
    become final (a decisive frame, a Stop, a drain) the trace is marked due; its decisions
    are recorded once what is collected is committed: before the trace's next fact in the
    batch (so in the trace's own order a decision still follows the fact that made it final
    and precedes everything after it, as unbatched), before a retry opens, or at the end of
    the batch.  So the attempts deciding in one batch share its commit instead of each
    committing the batch so far (at 100 concurrent streams that was two transactions per
    attempt).  A fresh attempt's start (which can decide nothing but a race) is judged
    after the batch.
    """

    def __init__(self) -> None:
        self.groups: dict[Any, list[tuple[Any, Any, Any, Any]]] = {}
        self.decide: dict[Any, dict[str, list[Any]]] = {}
        self.due: dict[tuple[Any, str], list[Any]] = {}
        "Traces (by recorder and id) whose decisions may be final: recorded at ``settle``."
        self.failures: list[tuple[Any, Exception]] = []
        self.commits = 0

    def add(self, attempt: Any, events: Any, expected: Any, blobs: Any) -> None:
        if (attempt._rec, attempt.trace.trace_id) in self.due:
            self.settle()  # the trace's pending decision goes before its next fact
        self.groups.setdefault(attempt._rec, []).append((attempt, events, expected, blobs))

    def decide_later(self, attempt: Any) -> None:
        traces = self.decide.setdefault(attempt._rec, {})
        traces.setdefault(attempt.trace.trace_id, []).append(attempt)

    def decide_now(self, attempt: Any) -> None:
        """A decision may be final at this point: it is recorded at the next ``settle``,
        before any later fact of its trace."""
        self.due.setdefault((attempt._rec, attempt.trace.trace_id), []).append(attempt)

    def settle(self) -> None:
        """Commit what is collected, then record the decisions that may be final: every
        due trace's in one transaction per store (``_decide_traces``)."""
        self.commit_appends()
        due, self.due = self.due, {}
        per_store: dict[Any, list[tuple[str, list[Any]]]] = {}
        for (rec, trace_id), attempts in due.items():
            per_store.setdefault(rec, []).append((trace_id, attempts))
        for rec, traces in per_store.items():
            self._decide_traces(rec, traces)

    def commit(self) -> list[tuple[Any, Exception]]:
        """Append every group in one transaction per store; deferred decisions after.
        Returns the attempts whose appends the store refused, with the error each got."""
        for rec, traces in self.decide.items():  # fresh starts: judged with the rest
            for trace_id, attempts in traces.items():
                self.due.setdefault((rec, trace_id), []).extend(attempts)
        self.decide.clear()
        self.settle()
        return self.failures

    def _decide_traces(self, rec: Any, traces: list[tuple[str, list[Any]]]) -> None:
        """Record the newly final decisions of ``traces`` in ONE append expecting each
        trace stream where its plan saw it (``record_decisions`` does one trace per
        transaction); on a conflict, or without planners, each trace on its own."""
        from tracestore.errors import ExpectedVersionConflict, StoreError
        from tracestore.events import StoredEvent
        from tracestore.ingest.decisions import catch_up, feed_written

        traces = [(t, [a for a in attempts if a.failure is None]) for t, attempts in traces]
        traces = [(t, attempts) for t, attempts in traces if attempts]
        planner_of = getattr(rec, "planner", None)
        if len(traces) < 2 or planner_of is None:
            for trace_id, attempts in traces:
                self._decisions(rec, trace_id, attempts)
            return
        try:
            with rec.lock:
                plans = []
                for trace_id, attempts in traces:
                    planner = planner_of(trace_id)
                    catch_up(rec.store, planner)
                    plans.append((planner, planner.missing(), attempts))
                plans = [p for p in plans if p[1]]
                if not plans:
                    return
                if len(plans) == 1:  # nothing to share: as unbatched
                    self._decisions(rec, plans[0][0].trace_id, plans[0][2])
                    return
                decided = [e for _, due, _ in plans for e in due]
                rec.forget_versions({e.stream for e in decided})  # they move these on
                try:
                    result = rec.store.append(
                        decided,
                        expected_versions={p.stream: p.trace_version for p, _, _ in plans})
                except ExpectedVersionConflict:  # a rule changed meanwhile: one by one
                    for planner, _, attempts in plans:
                        planner.stale = True
                        self._decisions(rec, planner.trace_id, attempts)
                    return
                if result.skipped_ids:  # another writer stored some: catch up reads them
                    return
                positions = iter(result.positions)
                for planner, due, _ in plans:  # each planner learns its own as appended
                    feed_written(rec.store, planner, [
                        # recorded_at None: stand-ins the planner reads, not rows
                        StoredEvent(next(positions), new.id, new.stream, 0, new.event.type,
                                    0, None,  # type: ignore[arg-type]
                                    new.trace_id, new.event, "") for new in due])
        except StoreError as exc:
            for _, attempts in traces:
                for attempt in attempts:
                    if attempt.failure is None:
                        attempt.failure = exc
                        self.failures.append((attempt, exc))

    def commit_appends(self) -> None:
        """Commit the appends collected so far (one transaction per store)."""
        from tracestore.errors import ExpectedVersionConflict, InputError

        from tracestore.errors import TracestoreError

        for rec, groups in self.groups.items():
            try:
                with rec.lock:
                    outcomes: list[Any] = rec.store.append_fresh_groups(
                        [(id(attempt), events, expected, blobs)
                         for attempt, events, expected, blobs in groups], rec.versions)
                    rec.forget_versions(())  # (bounded)
            except TracestoreError as exc:  # the store failed as a whole: nothing went in
                outcomes = [exc] * len(groups)
            self.commits += 1
            _feed_planners(rec, groups, outcomes)
            for (attempt, *_), outcome in zip(groups, outcomes):
                if isinstance(outcome, Exception) and attempt.failure is None:
                    attempt.failure = outcome
                    error: Exception = outcome
                    if isinstance(outcome, ExpectedVersionConflict):
                        error = InputError(f"attempt {attempt.attempt_id!r} is already in the "
                                           "log", code="attempt_exists",
                                           attempt_id=attempt.attempt_id)
                    self.failures.append((attempt, error))
        self.groups.clear()

    def _decisions(self, rec: Any, trace_id: str, attempts: list[Any]) -> None:
        from tracestore.errors import StoreError

        live = [a for a in attempts if a.failure is None]
        if not live:
            return
        try:
            rec.record_decisions(trace_id)
        except StoreError as exc:
            for attempt in live:
                attempt.failure = exc
                self.failures.append((attempt, exc))


def _feed_planners(rec: Any, groups: list[Any], outcomes: list[Any]) -> None:
    """Feed each trace's decision planner the rows the batch appended, at the positions
    the store gave them (``feed_rows``): deciding then reads nothing of them back."""
    from tracestore.ingest.decisions import trace_span
    from tracestore.recording.folding import feed_rows

    written: dict[str, list[tuple[int, Any]]] = {}
    spans: dict[str, Any] = {}
    for (attempt, events, _, _), outcome in zip(groups, outcomes):
        if isinstance(outcome, Exception):
            continue
        trace_id = attempt.trace.trace_id
        written.setdefault(trace_id, []).extend(zip(outcome.positions, events))
        # The groups of one transaction follow each other: the first's start, the last's end
        span, first = trace_span(outcome, trace_id), spans.get(trace_id, ...)
        if first is ...:
            first = span
        spans[trace_id] = None if span is None or first is None else \
            (trace_id, first[1], span[2])
    planner = getattr(rec, "planner", None)
    if planner is None:
        return
    with rec.lock:
        for trace_id, rows in written.items():
            feed_rows(rec.store, planner(trace_id), rows, spans.get(trace_id))


class Chunk:
    """Bytes an attempt's application received, waiting for the writer."""

    __slots__ = ("attempt", "data")

    def __init__(self, attempt: Any, data: bytes) -> None:
        self.attempt, self.data = attempt, data

    def __call__(self) -> None:
        self.attempt.record(self.data)


__all__ = ["BATCH_ITEMS", "MAX_LAG_SECONDS", "MERGE_BYTES", "QUEUE_ITEMS", "QUIET_SECONDS",
           "Batch", "Chunk", "Writer", "current_batch", "group_chunks"]
