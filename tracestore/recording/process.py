"""The process writer: a transport's recording done by a child process, off the
application's interpreter (``RecordingTransport(..., writer="process")``).

The application's side (``ProcessWriter``) does no decoding and no store work: each fact
of an attempt (opened with its ids and request, a chunk's bytes, its ending, a
destination) is one length-prefixed record, taken in memory and appended to a journal file
by the transport's journal thread (``os.write`` to the page cache: a write never waits for
the child, and what was written survives the application's process being killed; the
application's own threads make no system call for it, see ``_write``).  A child process (``python -m
tracestore.recording.process_child JOURNAL``), started on first use and ``os.nice``'d so it
takes only the CPU the application leaves, reads the journal and runs the same recording
code the writer thread runs (``body.BodyAttempt`` and ``writer.Writer``: decoding, events,
batches, decisions) against the same store URL.

* Attempt ids, turns and retries are fixed in the application (``BodyRecording.assign``),
  so ``transport.attempts``, turn handles and ``attempt_of`` work as with the thread; an
  attempt's ``decision()`` flushes, then reads the store.
* ``flush()`` appends a flush mark, wakes the child (its stdin) and returns when the child
  answers (its stdout) that everything journaled before the mark is committed.
* The application's process dies (even SIGKILL): what the journal thread had not yet
  written is lost (the records of its last ``LINGER_SECONDS``; never anything ``flush``
  acknowledged); the child sees its stdin close,
  records the journal to its end (in-flight attempts stay ``pending``: no ending is made up), then
  exits.  The child dies: the application's streams go on, ``transport.failures`` gets a
  ``recorder_process_died`` error (warned once); a transaction is never half-written.
"""

from __future__ import annotations

import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from tracestore.errors import AttemptClosedError, InputError, StoreError, TracestoreError

#: A record: kind (1 byte), the attempt's key in this journal, the payload's length.
HEADER = struct.Struct("<cII")
OPEN, CHUNK, CALL, FLUSH, ROTATE = b"O", b"C", b"K", b"F", b"R"

#: The application starts a new journal file once one holds this many bytes; the child
#: deletes each file it has recorded to the end (so disk use follows the child's lag).
JOURNAL_BYTES = 64 * 1024 * 1024

#: Journaled bytes the child may be behind before a NEW attempt is refused
#: (``recording_lagged``; attempts already recording go on, so each keeps a whole prefix):
#: the journal's memory stays bounded when the application streams faster, for longer,
#: than the child (about one core) can record.
MAX_BACKLOG_BYTES = 512 * 1024 * 1024

#: The child tells the application how far it has read every this many bytes.
PROGRESS_BYTES = 1024 * 1024

#: How often the child looks at the journal while nothing wakes it (seconds).
POLL_SECONDS = 0.005

#: The child holds back while the journal grows (the application is streaming) and
#: records once it has been quiet this long (seconds) ...
QUIET_SECONDS = 0.02

#: ... or once this much is held, or the oldest held record is this old (seconds): what is
#: held is in the journal, so a crash of the application loses none of it.
HOLD_BYTES = 32 * 1024 * 1024
HOLD_SECONDS = 2.0

#: The journal thread, woken by a record, waits this long (seconds) before it writes, so
#: that the records taken meanwhile go in the same write: one wake-up and one turn of the
#: interpreter per interval instead of one per chunk (at 100 streams the application's CPU
#: for a recorded round then equals a plain round's).  An application killed outright loses
#: at most the records of this interval (never what ``flush`` acknowledged).
LINGER_SECONDS = 0.005

#: The child reads the journal this much at a time.
READ_BYTES = 1 << 20

#: The child's niceness: the lowest priority that still always makes progress.
NICE = 19

_defer = threading.local()


def deferring() -> bool:
    """Whether ``Recorder.trace`` on this thread should only note its arguments: the
    process writer calls a transport's trace factory in the application, and the trace is
    opened by the child."""
    return getattr(_defer, "on", False)


def deferred(factory: Any) -> Any:
    """``factory()`` with ``Recorder.trace`` only noting its arguments (``deferring``):
    the trace it names, not opened (``TraceRecorder.opening`` says how to open it)."""
    _defer.on = True
    try:
        return factory()
    finally:
        _defer.on = False


def can_start() -> bool:
    """Whether this interpreter can run the writer process: a POSIX system that starts
    processes (not WebAssembly) and an interpreter that runs ``python -m`` (not a frozen
    application bundle)."""
    if os.name != "posix" or sys.platform in ("emscripten", "wasi"):
        return False
    if getattr(sys, "frozen", False):
        return False
    return bool(sys.executable) and os.access(sys.executable, os.X_OK)


def shareable(url: str) -> bool:
    """Whether the store at ``url`` is one the writer process can open too: a SQLite file
    or a server database, not SQLite in memory."""
    from tracestore.store.engine import is_memory_sqlite, is_sqlite

    return not is_memory_sqlite(url) and not (is_sqlite(url) and "mode=memory" in url)


class RemoteAttempt:
    """The application's view of an attempt the writer process records: its id, trace and
    the attempt it retries; ``decision()`` reads the store once the child has recorded
    everything the application received (it flushes first), and ``destination`` /
    ``readback`` are recorded, in order after the attempt's bytes, before they return —
    what the thread writer's ``AttemptRecorder`` gives for the same calls."""

    def __init__(self, trace: Any, attempt_id: str, body: Any = None) -> None:
        self.trace, self.attempt_id = trace, attempt_id
        self._body = body
        self.retry_of: str | None = getattr(body, "retry_of", None)

    def _flush(self) -> None:
        if self._body is not None:
            self._body.owner.flush()

    def destination(self, destination: str, text: str, *, cut_off: bool = False) -> None:
        """What the application wrote to a destination (as ``AttemptRecorder.destination``):
        bad input raises now; recorded after every byte of this attempt the application had
        received, and committed when this returns."""
        self._handle().destination(destination, text, cut_off=cut_off)
        self._flush()

    def readback(self, destination: str, text: str) -> None:
        """What the destination held when the application read it back."""
        self._handle().readback(destination, text)
        self._flush()

    def _handle(self) -> Any:
        if self._body is None or self._body.handle is None:
            raise InputError(f"attempt {self.attempt_id!r} has no transport to record "
                             "through", code="not_started", attempt_id=self.attempt_id)
        return self._body.handle

    def decision(self) -> Any:
        from tracestore.ingest.decisions import decide_attempt

        self._flush()
        rec = self.trace.recorder
        with rec.lock:
            rec.check_open()
            decided = decide_attempt(rec.store, self.trace.trace_id, self.attempt_id)
        if decided is None:
            raise InputError(f"attempt {self.attempt_id!r} is not recorded (see the "
                             "transport's failures)", code="not_started",
                             attempt_id=self.attempt_id)
        return decided

    def __repr__(self) -> str:
        return f"RemoteAttempt({self.attempt_id!r}, trace={self.trace.trace_id!r})"


class ProcessWriter:
    """The application's end of the journal (one per transport)."""

    def __init__(self, owner: Any) -> None:
        self.owner = owner
        self._lock = threading.Lock()     # one record at a time, in order
        self._acked = threading.Condition()
        self._keys = 0
        self._seq = self._acked_seq = 0
        self._written = 0   # journaled bytes (rotation marks not counted) ...
        self.consumed = 0   # ... and those the child said it has recorded
        self._fd: int | None = None
        self._size = 0
        self._pending: list[bytes] = []      # records taken, not yet written (in order)
        self._has_pending = threading.Condition(self._lock)
        self._io_lock = threading.Lock()     # one writer of the journal at a time
        self._rotations = 0
        self._dir: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.dead: TracestoreError | None = None
        "Why the child cannot record any more (it died, the journal cannot be written)."
        self._stopping = False
        self._gone = False  # the child has exited (its answers ended)
        self._refused_closed = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def stopped(self) -> bool:
        """``stop`` was called (the transport closed): the child records nothing more."""
        return self._stopping

    # -- the application's facts ---------------------------------------------------------
    def open(self, attempt: Any) -> int | None:
        """Journal the opening of ``attempt`` (a ``BodyAttempt``); its key, None when it
        cannot be recorded (the failure is on ``transport.failures``)."""
        try:  # a factory's trace: its arguments, opened by the child
            trace = deferred(lambda: attempt.handle.trace)
        except TracestoreError as exc:
            self.owner.failed(exc)
            return None
        rec = trace.recorder
        if rec.closed:
            self.owner.failed(AttemptClosedError("this recorder is closed; it records "
                                                 "nothing more", code="recorder_closed"))
            return None
        if self._stopping:
            self.owner.failed(StoreError("this recording transport is closed (its writer "
                                         "process has exited); this response is not "
                                         "recorded", code="recording_failed"))
            return None
        if self._written - self.consumed > MAX_BACKLOG_BYTES:
            self.owner.failed(StoreError(
                f"the recorder's writer process is {self._written - self.consumed} journaled "
                f"bytes behind (more than {MAX_BACKLOG_BYTES}); this attempt is not "
                "recorded, the application's stream goes on", code="recording_lagged"))
            return None
        url = rec.store.url
        if not shareable(url):
            self.owner.failed(unavailable())
            return None
        request, headers = getattr(attempt, "wire", (None, None))
        attempt.secret_fields = fields = rec.secret_fields
        from tracestore.text.redaction import redact
        info = {"url": url, "trace_id": trace.trace_id,
                "opening": getattr(trace, "opening", None),
                "attempt_id": attempt.handle.attempt_id, "retry_of": attempt.retry_of,
                "api": attempt.api, "framing": attempt.framing, "refusal": attempt.refusal,
                "settings": redact(attempt.settings, fields)
                if not callable(attempt.settings) else None,
                "request": _request_parts(request, fields), "headers": _size_headers(headers),
                "prompts": rec.record_prompts}
        with self._lock:
            self._keys += 1
            key = self._keys
        self._write(OPEN, key, pickle.dumps(info, protocol=pickle.HIGHEST_PROTOCOL))
        attempt.recorder = RemoteAttempt(type(trace)(rec, trace.trace_id), info["attempt_id"],
                                         attempt)
        return key

    def chunk(self, key: int, data: bytes) -> None:
        self._write(CHUNK, key, data)

    def call(self, key: int, what: tuple[Any, ...]) -> None:
        self._write(CALL, key, pickle.dumps(what, protocol=pickle.HIGHEST_PROTOCOL))

    def flush(self) -> None:
        """Return when the child has committed everything journaled before this call (at
        once when there is no child, or it died: see ``transport.failures``)."""
        with self._lock:
            if self.proc is None or self.dead is not None or self._stopping:
                return  # (after ``stop``: everything journaled was committed then)
            self._seq += 1
            seq = self._seq
        self._write(FLUSH, 0, struct.pack("<Q", seq))
        self._drain()  # the mark is in the journal before the child is woken
        self._wake()
        with self._acked:
            while self._acked_seq < seq and self.dead is None and not self._gone:
                self._acked.wait(1.0)

    def record_here(self, attempt: Any, method: str, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> None:
        """A handle's ``destination`` / ``readback`` after ``stop`` (the transport closed,
        its child gone): appended in the application's process, through the attempt's
        recorder, after everything the child committed — as the writer thread records it
        after its transport's ``close``.  A failure goes to ``transport.failures``."""
        from tracestore.events import NewEvent, attempt_stream
        from tracestore.ingest.evidence import destination_event
        from tracestore.recording.attempt_writes import _now

        remote = attempt.recorder
        try:
            if not isinstance(remote, RemoteAttempt) or method not in ("destination",
                                                                       "readback"):
                raise StoreError(f"attempt {attempt.handle.attempt_id!r}: its transport was "
                                 "closed before it was recorded; nothing more of it is "
                                 "recorded", code="recording_failed")
            destination, text = args
            event = destination_event(remote.attempt_id, destination, text,
                                      readback=method == "readback", observed_at=_now(),
                                      cut_off=bool(kwargs.get("cut_off", False)))
            rec = remote.trace.recorder
            with rec.lock:
                rec.check_open()
                rec.store.append([NewEvent(attempt_stream(remote.attempt_id), event,
                                           trace_id=remote.trace.trace_id)])
                rec.forget_versions([attempt_stream(remote.attempt_id)])
        except TracestoreError as exc:
            self.owner.failed(exc)

    def stop(self) -> None:
        """Flush, then let the child finish and exit (the transport's ``close``)."""
        self.flush()
        with self._lock:
            proc, self._stopping = self.proc, True
            self._has_pending.notify_all()
            if proc is None:
                return
        self._drain()
        with self._io_lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)
        if proc.stdin is not None:  # the child reads the journal to its end, then exits
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            pass

    # -- internals -----------------------------------------------------------------------
    def _write(self, kind: bytes, key: int, payload: bytes) -> None:
        """Take one record; the journal thread (``_journal_loop``) appends it to the file.
        The application's thread makes no system call here: a write gives up the
        interpreter, and taking it back waits behind the application's other threads (with
        100 streams each chunk's own ``os.write`` cost its thread up to a switch interval).
        The journal thread writes whatever was taken while it waited, in the order taken."""
        record = HEADER.pack(kind, key, len(payload)) + payload
        with self._lock:
            if self.dead is not None:
                return
            if not self._stopping:
                try:
                    if self.proc is None:
                        self._start()
                except OSError as exc:
                    self._died(_journal_failed(exc))
                    return
                self._written += len(record)
                self._pending.append(record)
                if len(self._pending) == 1:
                    self._has_pending.notify()
                return
            if kind == FLUSH or self._refused_closed:
                return
            self._refused_closed = True  # said once: what streams through a closed transport
        self.owner.failed(StoreError("this recording transport is closed (its writer process "
                                     "has exited); what its streams deliver now is not "
                                     "recorded", code="recording_failed"))

    def _journal_loop(self) -> None:
        """The journal thread: write what was taken, as soon as it was taken, until stop."""
        while True:
            with self._lock:
                while not self._pending and not self._stopping and self.dead is None:
                    self._has_pending.wait(1.0)  # (the timeout: ``dead`` is set unlocked)
                if not self._pending and (self._stopping or self.dead is not None):
                    return
            time.sleep(LINGER_SECONDS)  # let the records of this moment gather: one write
            self._drain()

    def _drain(self) -> None:
        """Append every record taken so far to the journal (the journal thread, ``flush``
        and ``stop``; ``_io_lock`` keeps the batches in the order they were taken)."""
        with self._io_lock:
            with self._lock:
                records, self._pending = self._pending, []
                fd = self._fd
            if not records or fd is None or self.dead is not None:
                return
            data = records[0] if len(records) == 1 else b"".join(records)
            try:
                _write_all(fd, data)
                self._size += len(data)
                if self._size >= JOURNAL_BYTES:
                    self._switch(fd)
            except OSError as exc:
                self._died(_journal_failed(exc))

    def _switch(self, old: int) -> None:
        """Start the next journal file (under ``_io_lock``): the old one ends with the
        name of the next, and the child reads the next file once it has read that record."""
        assert self._dir is not None
        self._rotations += 1
        path = os.path.join(self._dir, f"journal-{self._rotations}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        name = path.encode()
        _write_all(old, HEADER.pack(ROTATE, 0, len(name)) + name)
        os.close(old)
        with self._lock:
            self._fd, self._size = fd, 0

    def _start(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="tracestore-journal-", dir=_journal_root())
        path = os.path.join(self._dir, "journal-0")
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        # ``-P``: the working directory is not put first on the child's path, so the child
        # runs this package (``root``), never another checkout the application runs in.
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "tracestore.recording.process_child", path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True)
        threading.Thread(target=self._read_answers, args=(self.proc,), daemon=True,
                         name="tracestore-recorder-answers").start()
        threading.Thread(target=self._journal_loop, daemon=True,
                         name="tracestore-recorder-journal").start()

    def _wake(self) -> None:
        proc = self.proc
        try:
            if proc is not None and proc.stdin is not None:
                proc.stdin.write(b"F")
                proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the child is gone: the answer reader says so

    def _read_answers(self, proc: subprocess.Popen[bytes]) -> None:
        """The child's answers: flush acknowledgements and recording failures."""
        assert proc.stdout is not None
        out = proc.stdout
        while True:
            head = out.read(5)
            if len(head) < 5:
                break
            kind, size = head[:1], struct.unpack("<I", head[1:])[0]
            body = out.read(size)
            if kind == b"P":
                self.consumed = max(self.consumed, struct.unpack("<Q", body)[0])
            elif kind == b"A":
                seq, consumed = struct.unpack("<QQ", body)
                with self._acked:
                    self.consumed = max(self.consumed, consumed)
                    self._acked_seq = max(self._acked_seq, seq)
                    self._acked.notify_all()
            elif kind == b"E":
                try:
                    error = pickle.loads(body)
                except Exception:  # noqa: BLE001 - an answer we cannot read is a failure too
                    error = StoreError("the recorder's writer process reported a failure "
                                       "that cannot be read", code="recording_failed")
                self.owner.failed(error)
            elif kind == b"B":  # the child finished cleanly
                self._ended()
                return
        status = proc.wait()
        self._ended()
        if self._dir is not None:  # the child is gone: no one reads the journal any more
            shutil.rmtree(self._dir, ignore_errors=True)
        if not self._stopping or status != 0:
            self._died(StoreError(f"the recorder's writer process exited (status {status}); "
                                  "what it had not committed is not recorded, the "
                                  "application's streams go on", code="recorder_process_died",
                                  status=status))

    def _ended(self) -> None:
        with self._acked:
            self._gone = True
            self._acked.notify_all()

    def _died(self, error: TracestoreError) -> None:
        if self.dead is None:
            self.dead = error
            self.owner.failed(error)
        with self._acked:
            self._acked.notify_all()


def _journal_root() -> str | None:
    """Where journals go: memory-backed ``/dev/shm`` where there is one (a write there never
    waits for a disk journal; it outlives the application's process, which is what it is
    for), else the temporary directory."""
    root = os.environ.get("TRACESTORE_JOURNAL_DIR") or "/dev/shm"
    return root if os.path.isdir(root) and os.access(root, os.W_OK) else None


def _journal_failed(exc: OSError) -> StoreError:
    return StoreError(f"the recorder's journal cannot be written ({exc}); recording "
                      "stopped, the application's streams go on",
                      code="recorder_process_died")


def unavailable() -> InputError:
    return InputError("the process writer records into a database another process can "
                      "open (a SQLite file or PostgreSQL), not an in-memory one",
                      code="process_writer_unavailable")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _request_parts(request: Any, fields: frozenset[str],
                   ) -> tuple[str, str | None, bytes] | None:
    """What ``request_settings`` reads of a request: path, user agent, body (if read), with
    its credentials replaced before the journal holds them."""
    if request is None:
        return None
    try:
        content = bytes(request.content)
    except Exception:  # noqa: BLE001 - a streamed request body that was not read: no settings
        content = b""
    from tracestore.recording.httpx_capture import raw_header

    from tracestore.text.redaction import redact_body, redact_text

    agent = raw_header(request.headers, b"user-agent")
    return (request.url.path, None if agent is None else redact_text(agent, fields),
            redact_body(content, fields))


def _size_headers(headers: Any) -> dict[str, str] | None:
    if headers is None:
        return None
    from tracestore.recording.httpx_capture import raw_header

    found = {name: raw_header(headers, name.encode())
             for name in ("content-length", "content-encoding")}
    return {name: value for name, value in found.items() if value is not None}


__all__ = ["JOURNAL_BYTES", "NICE", "ProcessWriter", "RemoteAttempt", "can_start",
           "shareable"]
