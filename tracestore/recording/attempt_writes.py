"""How an attempt's recorder turns what it learned into appends (``AttemptRecorder``'s
write half): its start, segments and frames as rows (``rows``), one transaction or a part
of the writer's batch, and the decisions that may become final after them."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import TYPE_CHECKING, Any

from tracestore.errors import ExpectedVersionConflict, InputError, StoreError
from tracestore.events import AttemptStarted, CaptureSegment, FrameRejected
from tracestore.ingest.decisions import trace_span
from tracestore.recording.folding import DecisionFold, feed_rows
from tracestore.recording.rows import FrameRows, Row, fresh_ids, model_row
from tracestore.recording.writer import current_batch

if TYPE_CHECKING:
    from tracestore.recording.recorder import Recorder, TraceRecorder
    from tracestore.recording.stream import FeedResult, LiveCapture


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


#: Bytes of an attempt's stream up to which its trace's planner folds the rows as they are
#: written (nothing read back to decide).  Past it, the judge's answer text would grow with
#: the stream while it is being recorded; the rows are read back in batches when judged.
FOLD_AS_WRITTEN_MAX = 1024 * 1024


class AttemptWrites:
    """The appends of ``recorder.AttemptRecorder`` (a mixin: it supplies the state)."""

    if TYPE_CHECKING:
        trace: TraceRecorder
        attempt_id: str
        capture: LiveCapture
        stream: str
        reader: str
        retry_of: str | None
        request: dict[str, Any] | None
        started: bool
        failure: StoreError | None
        _frame_rows: FrameRows | None

        @property
        def _rec(self) -> Recorder: ...

    def _write(self, result: FeedResult, *, final: bool = False,
               tail: list[Any] | None = None, decide: bool = False) -> None:
        api = self.capture.api
        if not self.started and api is None:
            return  # the API is not known yet: nothing can be recorded (bytes stay pending)
        events: list[Any] = []
        starting = not self.started
        if starting and api is not None:  # (the second test narrows api for the checker)
            events.append(AttemptStarted(
                attempt_id=self.attempt_id, trace_id=self.trace.trace_id,
                api=api, reader=self.reader, retry_of=self.retry_of,
                request=self.request, observed_at=_now()))
        seg = result.segment
        blobs: list[bytes] = []
        frames: list[Any] = []
        if seg is not None or final:
            data = seg.data if seg is not None else b""
            sha = seg.sha256 if seg is not None else sha256_bytes(b"")
            offset = seg.offset if seg is not None else self.capture.size
            events.append(CaptureSegment(
                attempt_id=self.attempt_id, sha256=sha, offset=offset, size=len(data),
                framing=self.capture.framing or "unknown", final=final,
                stream_sha256=self.capture.stream_sha256 if final else None))
            blobs.append(data)
            frames = result.frames
        if result.rejected is not None:  # as ingest records a stream that turned invalid
            r = result.rejected
            rejected = FrameRejected(attempt_id=self.attempt_id, code=r.code,
                                     offset=r.offset, index=r.index, detail=r.detail)
        tail = tail or []
        ids = fresh_ids(len(events) + len(frames) + (result.rejected is not None)
                        + len(tail))
        trace_id = self.trace.trace_id
        rows = [model_row(self.stream, i, trace_id, e) for i, e in zip(ids, events)]
        if frames:
            rows += self._frames.rows(frames, ids[len(rows):], sha, offset)
        if result.rejected is not None:
            rows.append(model_row(self.stream, ids[len(rows)], trace_id, rejected))
        rows += [model_row(self.stream, i, trace_id, e) for i, e in zip(ids[len(rows):], tail)]
        self._append(rows, blobs, decide=decide or starting)
        if starting:
            self._decide(starting=True)  # this start supersedes older attempts of the trace

    def _append(self, events: list[Any], blobs: list[bytes] = (),  # type: ignore[assignment]
                decide: bool = False) -> None:
        """One transaction (or a part of the writer's batch): ``events`` are models or
        ``rows.Row``.  The first append expects the attempt stream at version 0, so two
        writers can never both start one attempt id.  Later appends expect nothing: other
        writers legitimately add ``release.decided`` to this stream (a retry's start
        supersedes it), and only this reader ever adds its frames; the version this
        recorder wrote last is not read back (``Recorder.versions``), the store's unique
        (stream, version) guards it.  ``decide``: these events may make decisions final;
        they are written in the same transaction when the planner can tell
        (``folding.DecisionFold``)."""
        if not events:
            return
        rec, trace_id = self._rec, self.trace.trace_id
        ids = iter(fresh_ids(len(events)))
        batch = [e if e.__class__ is Row else model_row(self.stream, next(ids), trace_id, e)
                 for e in events]
        expected = None if self.started else {self.stream: 0}
        shared = current_batch()
        if shared is not None:  # the transport's writer commits its whole batch at once
            shared.add(self, batch, expected, blobs)
            self.started = True
            return
        planner = rec.planner(trace_id)
        lean = self.capture.size <= FOLD_AS_WRITTEN_MAX  # else read back when judged
        fold = DecisionFold(rec.store, planner, batch, 2 * (len(planner.judges) + 1)) \
            if decide and lean else None
        try:
            (outcome,) = rec.store.append_fresh_groups(
                [(self, batch, expected, blobs)], rec.versions, then=fold,
                then_rows=fold.room if fold is not None else 0)
            if isinstance(outcome, Exception):
                raise outcome
        except ExpectedVersionConflict as exc:
            self._forget_fold(fold)
            self.failure = exc
            raise InputError(f"attempt {self.attempt_id!r} is already in the log",
                             code="attempt_exists", attempt_id=self.attempt_id) from exc
        except StoreError as exc:
            self._forget_fold(fold)
            self.failure = exc
            raise
        self.started = True
        if fold is not None and not fold.settle(outcome):
            rec.drop_planner(trace_id)  # fed rows of a try that did not commit
            planner, fold = rec.planner(trace_id), None
        if fold is not None and fold.fed:
            return  # the planner folded the rows, and the decisions, as written
        if lean:  # deciding reads none of it back
            feed_rows(rec.store, planner, list(zip(outcome.positions, batch)),
                      trace_span(outcome, trace_id))
        else:  # a long answer is read back when it is judged: memory stays flat
            planner.head = None

    def _forget_fold(self, fold: DecisionFold | None) -> None:
        if fold is not None and fold.fed:
            self._rec.drop_planner(self.trace.trace_id)

    @property
    def _frames(self) -> FrameRows:
        """This attempt's frame rows (made when its API is known)."""
        if self._frame_rows is None:
            self._frame_rows = FrameRows(self.stream, self.trace.trace_id, self.attempt_id,
                                         self.capture.api or "", self.reader)
        return self._frame_rows

    def _decide(self, *, starting: bool = False) -> None:
        shared = current_batch()
        if shared is not None:  # planned from the log, once the batch's facts are in it
            if starting and self.retry_of is None:
                shared.decide_later(self)
            else:
                shared.decide_now(self)
            return
        try:
            self._rec.record_decisions(self.trace.trace_id)
        except StoreError as exc:
            self.failure = exc
            raise


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


__all__ = ["AttemptWrites", "sha256_bytes"]
