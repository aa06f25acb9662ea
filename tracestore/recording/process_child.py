"""The process writer's child: ``python -m tracestore.recording.process_child JOURNAL``.

It reads the journal the application's ``process.ProcessWriter`` appends to (and the files
it rotates to) and records every attempt in it with the code the writer thread runs
(``body.BodyAttempt``, ``writer.Writer``), answering flush marks and failures on its own
stdout; it exits once the application closes its stdin (or dies) and the journal is read
to its end.  The protocol and its guarantees are in ``process``'s docstring.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import threading
import time
import warnings
from typing import Any

from tracestore.errors import StoreError, TracestoreError
from tracestore.recording.process import (
    CALL, CHUNK, FLUSH, HEADER, HOLD_BYTES, HOLD_SECONDS, NICE, OPEN, POLL_SECONDS,
    PROGRESS_BYTES, QUIET_SECONDS, READ_BYTES, ROTATE, _write_all,
)


class _Request:
    """Just what ``httpx_capture.request_settings`` reads, rebuilt from the journal."""

    def __init__(self, path: str, agent: str | None, content: bytes) -> None:
        from types import SimpleNamespace

        self.url = SimpleNamespace(path=path)
        self.headers = {"user-agent": agent} if agent else {}
        self.content = content


_answers_fd: list[int] = []


def _answer(kind: bytes, body: bytes) -> None:
    try:
        _write_all(_answers_fd[0], kind + struct.pack("<I", len(body)) + body)
    except OSError:
        pass  # the application is gone: the journal is still recorded to its end


def _lower_priority() -> None:
    """Take only the CPU the application leaves: the lowest priority of the normal class
    (nice 19: about 1.5% of a core against one busy thread of the application, yet never
    starved the way Linux's idle class can starve it on a loaded machine, so the journal
    cannot grow without bound)."""
    try:
        os.nice(NICE - os.nice(0))
    except OSError:
        pass


def child_main(path: str) -> int:
    """Record the journal at ``path`` (and the files it rotates to) until the parent closes
    this process's stdin and the journal is read to its end."""
    import select

    from tracestore.recording.body import BodyAttempt, BodyRecording
    from tracestore.recording.httpx_capture import body_size, request_settings
    from tracestore.recording.recorder import Recorder, TraceRecorder
    from tracestore.recording.turn import AttemptHandle

    _lower_priority()
    _answers_fd.append(os.dup(1))  # answers only: anything printed goes to stderr instead
    os.dup2(2, 1)
    answers = threading.Lock()

    class Replica(BodyRecording):
        """The child's transport: attempts made from journal records, recorded by the
        writer thread as the application's thread-mode transport records them."""

        def __init__(self) -> None:
            super().__init__(None, ())
            self.next: tuple[Any, str, str | None] | None = None

        def assign(self, attempt: BodyAttempt) -> tuple[Any, str | None]:
            assert self.next is not None
            trace, attempt_id, retry_of = self.next
            handle = AttemptHandle(attempt, trace, None)
            handle.attempt_id = attempt_id
            return handle, retry_of

        def opens_a_retry(self, attempt: BodyAttempt) -> bool:
            """Whether opening ``attempt`` needs the log to hold what came before it (a
            retry): a factory's fresh trace never does."""
            return attempt.retry_of is not None or not callable(attempt.handle._trace) \
                and attempt.handle.trace_id in self._last

        def failed(self, exc: TracestoreError) -> None:
            self.failures.append(exc)
            try:
                body = pickle.dumps(exc)
            except Exception:  # noqa: BLE001 - an error we cannot send: its words
                body = pickle.dumps(StoreError(str(exc), code="recording_failed"))
            with answers:
                _answer(b"E", body)

    owner = Replica()
    recorders: dict[str, Recorder] = {}
    attempts: dict[int, BodyAttempt] = {}
    control = sys.stdin.buffer.fileno()
    parent_gone = False
    fd = os.open(path, os.O_RDONLY)
    buffer = bytearray()

    def recorder_for(url: str) -> Recorder:
        if url not in recorders:
            recorders[url] = Recorder(url)
        return recorders[url]

    def opened(key: int, info: dict[str, Any]) -> None:
        try:
            rec = recorder_for(info["url"])
        except TracestoreError as exc:
            owner.failed(exc)
            return
        trace_id, opening = info["trace_id"], info["opening"]
        trace: Any = TraceRecorder(rec, trace_id) if opening is None else \
            (lambda: rec.trace(trace_id, **opening))
        request, headers = info["request"], info["headers"]
        settings: Any = info["settings"]
        if settings is None and request is not None:
            # The body was redacted with the application's secret fields before it was
            # journaled; the prompt is bounded here, as the thread writer bounds it.
            def settings() -> dict[str, Any]:
                return request_settings(_Request(*request),
                                        prompts=info.get("prompts", False))
        owner.next = (trace, info["attempt_id"], info["retry_of"])
        attempt = BodyAttempt(owner, info["api"], info["framing"], settings or {},
                              (lambda: body_size(headers)) if headers is not None else None,
                              refusal=info["refusal"])
        attempts[key] = owner.track(attempt)

    def called(attempt: BodyAttempt, what: tuple[Any, ...]) -> None:
        name, *args = what
        if name == "drain":
            attempt._end(lambda: attempt.recorder.drain(*args))
        elif name == "closed_at":
            attempt._closed_at(*args)
        elif name == "call":
            method, positional, named = args
            attempt.later_call(lambda rec: getattr(rec, method)(*positional, **named))

    def run(kind: bytes, key: int, payload: bytes) -> None:
        nonlocal fd
        if kind == CHUNK:
            if key in attempts:
                attempts[key].received(payload)
        elif kind == OPEN:
            opened(key, pickle.loads(payload))
        elif kind == CALL:
            if key in attempts:
                called(attempts[key], pickle.loads(payload))
        elif kind == FLUSH:
            owner.flush()
            with answers:
                _answer(b"A", payload + struct.pack("<Q", consumed))
        elif kind == ROTATE:
            os.close(fd)
            os.unlink(_current[0])
            _current[0] = payload.decode()
            fd = os.open(_current[0], os.O_RDONLY)

    _current = [path]
    consumed = reported = 0
    held_since = last_data = 0.0
    flush_asked = False

    def record_buffer() -> None:
        """Record every whole record in ``buffer`` (a part at its end waits for the rest)."""
        nonlocal consumed, reported
        start = 0
        while len(buffer) - start >= HEADER.size:
            kind, key, size = HEADER.unpack_from(buffer, start)
            end = start + HEADER.size + size
            if end > len(buffer):
                break
            payload = bytes(buffer[start + HEADER.size:end])
            start = end
            if kind != ROTATE:  # the application counts what it journaled the same way
                consumed += HEADER.size + size
            try:
                run(kind, key, payload)
            except Exception as exc:  # noqa: BLE001 - one bad record stops nothing else
                owner.failed(StoreError(f"the recorder's writer process could not record "
                                        f"a journal record ({exc!r})", code="recording_failed"))
            if kind == ROTATE:  # the last record of its file: the rest is in the next
                break
        del buffer[:start]
        if consumed - reported >= PROGRESS_BYTES:
            reported = consumed
            with answers:
                _answer(b"P", struct.pack("<Q", consumed))

    while True:
        data = os.read(fd, READ_BYTES)
        now = time.monotonic()
        if data:
            if not buffer:
                held_since = now
            buffer += data
            last_data = now
            if len(data) == READ_BYTES:
                continue  # more is waiting: read it before deciding
        # Hold back while the journal grows (the application is streaming), as the writer
        # thread waits for the application's pause: recording then would compete with it
        # for the machine.  A flush, the parent's exit, a quiet journal, HOLD_BYTES held or
        # HOLD_SECONDS waited end the hold.
        if buffer and (flush_asked or parent_gone or now - last_data >= QUIET_SECONDS
                       or len(buffer) >= HOLD_BYTES or now - held_since >= HOLD_SECONDS):
            before = len(buffer)
            record_buffer()
            if len(buffer) < before:  # recorded some: read on (a part record may be left)
                flush_asked = False
                held_since = now
                continue
        if parent_gone:
            break  # the journal is read to its end and nothing more can come
        ready, _, _ = select.select([control], [], [], POLL_SECONDS)
        if ready:
            woken = os.read(control, 4096)
            if woken:
                flush_asked = True
            else:
                parent_gone = True  # one more read of the journal to its end, then stop
    owner.flush()
    owner.stop_writer()
    for rec in recorders.values():
        rec.close()
    os.close(fd)
    try:
        os.unlink(_current[0])
        os.rmdir(os.path.dirname(_current[0]))
    except OSError:
        pass
    with answers:
        _answer(b"B", b"")
    return 0


__all__ = ["child_main"]


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # failures are answered to the application
    # The child lives as long as its application: a SIGTERM or Ctrl-C sent to the whole
    # process group must not cut the journal short (the application records its in-flight
    # streams as cut and flushes at exit; the child then sees its stdin close and exits
    # once the journal is recorded to its end).
    import signal

    from tracestore.recording import shutdown

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    shutdown.cut_at_exit = False  # the application alone knows a stream was cut
    sys.exit(child_main(sys.argv[1]))
