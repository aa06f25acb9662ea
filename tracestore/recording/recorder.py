"""The live recorder: an application's stream attempts appended to the log as they happen.

    rec = Recorder("sqlite:///app.db")
    trace = rec.trace("question-42", task={"answer_patterns": ["Paris"]})
    attempt = trace.attempt(api="anthropic-messages", request={"model": "claude-…"})
    for chunk in body:             # raw bytes as the application receives them
        attempt.feed(chunk)
    attempt.drain()                # clean/eof as the bytes show, or "error"/"reset"
    attempt.decision().status      # "released", "stopped", "pending", …

Every call is one small transaction (never one held open across the network), so a
process that dies mid-stream leaves a well-formed prefix: the attempt reads ``pending``
and ``verify`` passes.  Raw bytes go to content-addressed segments (``stream.py``), so
memory stays bounded however long the stream is.  One lock per recorder orders every
append, so attempts fed from several threads or asyncio tasks interleave in the global
order in which the calls were made; each ``AttemptRecorder`` is bound to its attempt when
opened — nothing routes by a "current attempt".
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from tracestore.errors import (
    AttemptClosedError, InputError, NotFound, StoreError,
)
from tracestore.events import (
    LocalStopped, NewEvent, TaskRule,
    TraceOpened, TransportDrained, attempt_stream, trace_stream,
)
from tracestore.ingest.plan import (
    DRAIN_OUTCOMES, binding_events, event_id,
)
from tracestore.projections.release import ReleaseDecision
from tracestore.ingest.decisions import DecisionPlanner, decide_attempt, record_decisions
from tracestore.recording.process import deferring
from tracestore.ingest.evidence import APP_DESTINATIONS, destination_event
from tracestore.recording.checks import (  # noqa: F401 - as_task_rule is imported from here
    _bindings, _check_profile, _open_store, _recorded_request, as_task_rule,
)
from tracestore.recording.attempt_writes import (  # noqa: F401 - sha256_bytes re-exported
    AttemptWrites, _now, sha256_bytes,
)
from tracestore.recording.rows import FrameRows
from tracestore.recording.trace_open import open_trace
from tracestore.recording.writer import current_batch
from tracestore.recording.stream import FeedResult, LiveCapture

if TYPE_CHECKING:
    from tracestore.store.log import EventStore



class Recorder:
    """Records traces and attempts into one event store (SQLite file, memory, PostgreSQL).

    Opening checks the database at once: an unreachable or foreign database raises a
    ``StoreError`` here, before the application starts streaming.
    """

    #: How long a recording append keeps trying while the database is locked or
    #: unreachable (``store.outage``): an outage shorter than this loses nothing.  A
    #: transport's writer (thread or process) does the waiting, never the application's
    #: stream; the Recorder API's own calls wait in the caller's thread.
    OUTAGE_S = 120.0

    def __init__(self, db: str | None = None, *, store: EventStore | None = None,
                 secret_fields: Iterable[str] = (), outage_s: float | None = None,
                 record_prompts: bool = False) -> None:
        from tracestore.store.log import EventStore
        from tracestore.text.redaction import secret_fields as fields_with

        self.secret_fields = fields_with(secret_fields)
        """Request fields whose values are never stored (``tracestore.text.redaction``):
        the default names, ``secret_fields`` and ``$TRACESTORE_SECRET_FIELDS``."""
        self.record_prompts = bool(record_prompts)
        """Whether the recording transports and the proxy keep a request's prompt (its
        messages, system text) in ``attempt.started``, redacted and bounded
        (``recording.prompts``); off by default, when only its settings are kept.

        It is the recorder's, not a transport's, because the recorder is the one object
        every recording path already holds when it reads a request: the thread writer
        reaches it through the attempt's trace (a transport records into several traces,
        and a turn's trace is only known per response), the process writer reads it from
        the same trace when it journals an attempt's opening (as it reads
        ``secret_fields``) and passes it to its child with the request, and the proxy is
        given it with ``--record-prompts`` as it is given ``--secret-field``."""
        self._owns_store = store is None
        self.store = store if store is not None else _open_store(EventStore, db)
        if self._owns_store:
            self.store.outage_s = self.OUTAGE_S if outage_s is None else outage_s
        self.lock = threading.RLock()
        self._planners: OrderedDict[str, DecisionPlanner] = OrderedDict()
        self.versions: dict[str, int] = {}
        """Attempt streams' versions as this recorder's last commits left them, so its
        appends do not read them back (``EventStore.append_fresh_groups``; the store's
        unique (stream, version) refuses a version another writer took meanwhile)."""
        self.closed = False
        "Set by ``close``: every later recording call raises ``recorder_closed``."
        self.open_attempts: weakref.WeakSet[AttemptRecorder] = weakref.WeakSet()
        "Attempts opened and not yet drained: cut at interpreter exit (``shutdown``)."
        from tracestore.recording.shutdown import watch_recorder

        watch_recorder(self)

    def check_open(self) -> None:
        """Refuse a recording call through a closed recorder (nothing is written)."""
        if self.closed:
            raise AttemptClosedError("this recorder is closed; it records nothing more (open "
                                     "a new Recorder)", code="recorder_closed")

    #: Traces whose decision planners are kept (least recently used go first): a planner
    #: holds only its trace's undecided attempts, and one evicted is rebuilt from the log.
    #: Above the traces a web server streams at once (64 thrashed at 100 concurrent
    #: streams: every batch rebuilt each planner by reading its trace back); an idle
    #: planner is small (its trace stream's few events and the decisions recorded).
    PLANNERS_KEPT = 4096

    def record_decisions(self, trace_id: str) -> list[int]:
        """Append the trace's newly final decisions.  The plan is caught up from the events
        this recorder has not read yet, outside the write transaction; only the append
        itself takes the database's write lock.  ``lock`` guards the shared planners."""
        with self.lock:
            planner = self.planner(trace_id)
            before = set(planner.recorded)
            try:
                return record_decisions(self.store, trace_id, planner)
            finally:  # decisions went to these attempts' streams: read their versions again
                self.forget_versions(attempt_stream(attempt_id) for attempt_id, _
                                     in planner.recorded - before)

    #: Stream versions kept (``versions``) at most; beyond, they are read again.
    VERSIONS_KEPT = 8192

    def forget_versions(self, streams: Any) -> None:
        """Streams another append moved on (decisions): their versions are read again."""
        for stream in streams:
            self.versions.pop(stream, None)
        if len(self.versions) > self.VERSIONS_KEPT:
            self.versions.clear()

    def drop_planner(self, trace_id: str) -> None:
        """Forget the trace's planner (it is made again from the log when next needed)."""
        with self.lock:
            self._planners.pop(trace_id, None)

    def planner(self, trace_id: str) -> DecisionPlanner:
        """The trace's decision planner (kept for the ``PLANNERS_KEPT`` latest traces)."""
        with self.lock:
            planner = self._planners.pop(trace_id, None) or DecisionPlanner(trace_id)
            self._planners[trace_id] = planner
            while len(self._planners) > self.PLANNERS_KEPT:
                self._planners.popitem(last=False)
            return planner

    def trace(self, trace_id: str, *, task: TaskRule | Mapping[str, Any] | None = None,
              profile: str | None = None, comparison: str | None = None,
              origin: str = "live recording", contract: Any = None,
              binding: Mapping[str, Any] | None = None) -> TraceRecorder:
        """Open (or join) a trace: one user question and every attempt to answer it.

        ``contract`` (a contract document or a loaded ``Contract``) makes the answers
        structured replies judged by it; ``binding`` is the request binding (seed 000:
        messages, request hash, schema, corpus identity, selected_context) that frames and
        citations are checked against.  Both are recorded once, with the trace."""
        self.check_open()
        if deferring():  # a process writer's trace factory: the writer process opens it
            return TraceRecorder(self, trace_id, opening={
                "task": task, "profile": profile, "comparison": comparison,
                "origin": origin, "contract": contract, "binding": binding})
        rule = as_task_rule(task)
        _check_profile(profile)
        opened = TraceOpened(trace_id=trace_id, task=rule, profile=profile,
                             comparison=comparison, origin=origin)
        new = NewEvent(trace_stream(trace_id), opened, id=event_id(trace_id, "", "trace"),
                       trace_id=trace_id)
        bound = [NewEvent(stream, e, id=eid, trace_id=trace_id) for stream, eid, e in
                 binding_events(trace_id, _bindings(contract, binding))]

        with self.lock:
            open_trace(self, trace_id, [new, *bound], rule)
        return TraceRecorder(self, trace_id)

    def turn(self, trace_id: str, **trace_options: Any) -> Any:
        """``with rec.turn(id, task=…) as turn:`` — every response streamed through a
        recording transport inside is an attempt of that trace (``recording/turn.py``)."""
        from tracestore.recording.turn import Turn

        return Turn(self, trace_id, trace_options)

    def close(self) -> None:
        with self.lock:  # after any append in progress; none after it
            self.closed = True
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TraceRecorder:
    """A trace being recorded: opens attempts bound to their own reader objects."""

    def __init__(self, recorder: Recorder, trace_id: str, *,
                 opening: dict[str, Any] | None = None) -> None:
        self.recorder, self.trace_id = recorder, trace_id
        self.opening = opening
        "A trace still to be opened by a process writer: the arguments it is opened with."

    def attempt(self, attempt_id: str | None = None, *, api: str = "auto",
                framing: str | None = None, retry_of: str | None = None,
                request: Mapping[str, Any] | None = None,
                reader: str | None = None) -> AttemptRecorder:
        """Open an attempt.  With a named ``api`` its start is recorded now (its position
        decides what it supersedes); with ``api="auto"`` when the first bytes tell the API."""
        self.recorder.check_open()
        attempt = AttemptRecorder(self, attempt_id or f"att-{uuid.uuid4().hex[:16]}",
                                  LiveCapture(api, framing), retry_of=retry_of,
                                  request=_recorded_request(
                                      request, self.recorder.secret_fields), reader=reader)
        if attempt.capture.api is None or retry_of is not None or current_batch() is not None:
            # Otherwise its start, appended now, expects a new stream: a second start of
            # the id is refused there (``attempt_exists``) without a read before it.
            attempt._check_new()
        if attempt.capture.api is not None:
            with self.recorder.lock:  # ordered with every other append of this recorder
                attempt._write(FeedResult(None))
        return attempt

    def decisions(self) -> list[ReleaseDecision]:
        from tracestore.projections.release import decide_all

        with self.recorder.lock:
            return decide_all(self.recorder.store.read(trace_id=self.trace_id), self.trace_id)


class AttemptRecorder(AttemptWrites):
    """One attempt's reader: feed it raw bytes, Stop, drain, destinations, read its decision."""

    def __init__(self, trace: TraceRecorder, attempt_id: str, capture: LiveCapture, *,
                 retry_of: str | None, request: dict[str, Any] | None,
                 reader: str | None) -> None:
        self.trace, self.attempt_id, self.capture = trace, attempt_id, capture
        self.retry_of, self.request = retry_of, request
        self.reader = reader or f"recorder:{attempt_id}"
        self.stream = attempt_stream(attempt_id)
        NewEvent(self.stream, None, trace_id=trace.trace_id)  # printable names, or refused
        self._frame_rows: FrameRows | None = None
        self.started = False
        self.drained = False
        self.failure: StoreError | None = None
        trace.recorder.open_attempts.add(self)
        "Set when an append failed: later calls refuse, so the log keeps a clean prefix."

    @property
    def _rec(self) -> Recorder:
        return self.trace.recorder

    @property
    def api(self) -> str | None:
        return self.capture.api

    # -- the application's facts ---------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Record raw body bytes as received (any chunking); complete frames become events."""
        with self._rec.lock:
            self._usable()
            result = self.capture.feed(data)
            self._write(result, decide=result.decisive)
            if result.decisive:
                self._decide()

    def stop(self, by: str = "user") -> None:
        """The application stopped reading (the user's Stop) at this point of the stream."""
        with self._rec.lock:
            self._usable()
            self._require_started("stop")
            self._append([LocalStopped(attempt_id=self.attempt_id, reader=self.reader, by=by,
                                       observed_at=_now())], decide=True)
            self._decide()

    def drain(self, outcome: str | None = None, detail: str | None = None, *,
              note: str | None = None) -> str:
        """The transport ended: ``clean``/``eof`` as the bytes show (default), or the
        ``error``/``reset`` the application saw.  ``note`` is added to the detail the bytes
        show (how the application ended the body).  Returns the outcome recorded."""
        if outcome is not None and outcome not in DRAIN_OUTCOMES:
            raise InputError(f"drain outcome {outcome!r} is not one of "
                             f"{', '.join(DRAIN_OUTCOMES)}", code="unknown_drain")
        with self._rec.lock:
            self._usable()
            result = self.capture.close()
            if not self.started and self.capture.api is None:
                raise InputError("no bytes arrived to tell the attempt's API from; open it "
                                 "with api=…", code="unknown_api", attempt_id=self.attempt_id)
            shown, shown_detail = self.capture.drain_as_shown()
            outcome = outcome or shown
            detail = detail if detail is not None else shown_detail
            if note:
                detail = f"{detail}; {note}" if detail else note
            if detail:  # a transport's message can quote a URL with its ?key=
                from tracestore.text.redaction import redact_text

                detail = redact_text(detail, self._rec.secret_fields)
            drained = TransportDrained(attempt_id=self.attempt_id, outcome=outcome,  # type: ignore[arg-type]
                                       detail=detail, reader=self.reader, observed_at=_now())
            self._write(result, final=True, tail=[drained], decide=True)
            self.drained = True
            self._rec.open_attempts.discard(self)
            self._decide()
            return outcome

    close = drain

    def destination(self, destination: str, text: str, *, cut_off: bool = False) -> None:
        """What the application wrote to a destination (ui, history, export, copy);
        ``cut_off=True``: the UI showed this partial text marked as cut off after a Stop."""
        self._destination(destination, text, readback=False, cut_off=cut_off)

    def readback(self, destination: str, text: str) -> None:
        """What the destination held when the application read it back."""
        self._destination(destination, text, readback=True)

    def decision(self) -> ReleaseDecision:
        """The release decision as the log stands now (recomputed by the projection from
        the log read in batches: memory does not grow with the trace's events)."""
        with self._rec.lock:
            self._rec.check_open()
            if not self.started:
                raise InputError(f"attempt {self.attempt_id!r} is not recorded yet (no bytes "
                                 "told its API)", code="not_started", attempt_id=self.attempt_id)
            decided = decide_attempt(self._rec.store, self.trace.trace_id, self.attempt_id)
        assert decided is not None  # started: its start is in the trace
        return decided

    # -- internals -----------------------------------------------------------------------
    def _destination(self, destination: str, text: str, *, readback: bool,
                     cut_off: bool = False) -> None:
        event = destination_event(self.attempt_id, destination, text, readback=readback,
                                  observed_at=_now(), cut_off=cut_off)
        with self._rec.lock:
            self._rec.check_open()
            self._refuse_if_failed()  # a drained attempt still takes destinations
            self._require_started("destination")
            self._append([event])

    def _refuse_if_failed(self) -> None:
        if self.failure is not None:
            raise StoreError(f"recording of attempt {self.attempt_id!r} failed earlier "
                             f"({self.failure.code}); it takes no more events",
                             code="recording_failed", attempt_id=self.attempt_id)

    def _usable(self) -> None:
        """Bytes, a Stop or a drain: refused once the attempt drained (its bytes and ending
        are final) or the recorder closed, before anything is appended."""
        self._rec.check_open()
        self._refuse_if_failed()
        if self.drained:
            raise AttemptClosedError(f"attempt {self.attempt_id!r} is drained; it takes no "
                                     "more bytes, Stop or drain (a retry is a fresh "
                                     "attempt; destination writes are still recorded)",
                                     code="attempt_closed", attempt_id=self.attempt_id)

    def _require_started(self, what: str) -> None:
        if not self.started:
            raise InputError(f"cannot record a {what} before the attempt's API is known; open "
                             "it with api=… or feed its first bytes", code="not_started",
                             attempt_id=self.attempt_id)

    def _check_new(self) -> None:
        """Refuse an attempt id already in the log and a retry of an unknown attempt."""
        store = self._rec.store
        with self._rec.lock:
            if store.read(stream=self.stream, limit=1):
                raise InputError(f"attempt {self.attempt_id!r} is already in the log; a retry "
                                 "is a fresh attempt", code="attempt_exists",
                                 attempt_id=self.attempt_id)
            if self.retry_of is not None:
                first = store.read(stream=attempt_stream(self.retry_of), limit=1)
                if not first or first[0].trace_id != self.trace.trace_id:
                    raise NotFound(f"retry_of names {self.retry_of!r}, which is not an attempt "
                                   f"of trace {self.trace.trace_id!r}", code="attempt_not_found",
                                   attempt_id=self.retry_of)


__all__ = ["APP_DESTINATIONS", "AttemptRecorder", "Recorder", "TraceRecorder", "as_task_rule"]
