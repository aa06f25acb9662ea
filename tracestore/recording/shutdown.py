"""A recording application that is stopped politely loses nothing.

Process managers (systemd, Docker, Kubernetes) stop a service with SIGTERM.  Python's default
for SIGTERM ends the process at once: no ``finally``, no ``atexit``, so whatever the writer
thread (or the process writer's journal) still held was lost and every stream in flight was
left ``pending`` for good.  Here:

* a Recorder or a recording transport, once created, makes SIGTERM end the process the way
  Ctrl-C and ``sys.exit`` do (``SystemExit``, exit status 0) — only when SIGTERM still has
  Python's default handler and only from the main thread, so a server's own handler
  (uvicorn's, gunicorn's) is never replaced; ``TRACESTORE_SIGTERM=default`` keeps the
  default;
* at interpreter exit every realtime session still open is recorded as far as it got (no
  close: its turn in flight reads as cut off by the recording's end);
* at interpreter exit every stream still in flight is recorded as cut (a ``reset`` drain
  whose detail says the application exited, and so its decision), then each transport's
  writer is flushed — for at most ``EXIT_FLUSH_S`` seconds, so a dead database never keeps
  the process from exiting — and stopped.

A process killed with SIGKILL still leaves a pending, well-formed prefix: nothing can run.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import weakref
from typing import Any, Final

#: The drain detail of a stream the application was still reading when it exited.
EXIT_DETAIL: Final = "the application exited before the stream ended"
#: The longest the exit hook waits for each transport's writer to record what it holds.
EXIT_FLUSH_S: Final = 20.0

#: False in a process writer's child: the journal says how each stream ended, and one its
#: application never ended (killed with SIGKILL) stays pending rather than made up.
cut_at_exit = True

_recorders: weakref.WeakSet[Any] = weakref.WeakSet()
_transports: weakref.WeakSet[Any] = weakref.WeakSet()
_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
_installed = False
_install_lock = threading.Lock()


def watch_recorder(recorder: Any) -> None:
    _recorders.add(recorder)
    _install()


def watch_transport(owner: Any) -> None:
    _transports.add(owner)
    _install()


def watch_session(owner: Any) -> None:
    """A realtime session recording (``record_realtime``): recorded at exit if still open."""
    _sessions.add(owner)
    _install()


def _install() -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        _installed = True
    atexit.register(_at_exit)
    if (os.environ.get("TRACESTORE_SIGTERM", "").strip().lower() != "default"
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    sys.exit(0)


def _at_exit() -> None:
    if not cut_at_exit:
        return
    for owner in list(_transports):
        _quietly(lambda owner=owner: _cut_transport(owner))
    for owner in list(_transports):
        _bounded(lambda owner=owner: (owner.flush(), owner.stop_writer()))
    for owner in list(_sessions):
        _bounded(owner.finish)
    for recorder in list(_recorders):
        _quietly(lambda recorder=recorder: _cut_recorder(recorder))


def flush_transports() -> None:
    """Wait until every recording transport of this process has recorded what its
    application received so far (a test's assertion reads the store right after)."""
    for owner in list(_transports):
        _bounded(owner.flush)


def _cut_transport(owner: Any) -> None:
    """Each body still being read: a reset drain (through the writer it was recorded by)."""
    with owner.state_lock:
        live = [a for a in owner.live if not a.closing]
    for attempt in live:
        if owner.process is not None:
            attempt._journal_end(("drain", "reset", EXIT_DETAIL))
        else:
            attempt._end(lambda attempt=attempt: attempt.recorder.drain("reset", EXIT_DETAIL))


def _cut_recorder(recorder: Any) -> None:
    """Each attempt opened through the Recorder API and not drained: a reset drain."""
    if recorder.closed:
        return
    for attempt in list(recorder.open_attempts):
        if attempt.started and not attempt.drained and attempt.failure is None:
            _quietly(lambda attempt=attempt: attempt.drain("reset", EXIT_DETAIL))


def _quietly(work: Any) -> None:
    """At exit a failure to record is reported, never raised (the process is ending)."""
    try:
        work()
    except Exception as exc:  # noqa: BLE001 - nothing may stop the exit
        sys.stderr.write(f"tracestore: at exit, recording stopped ({type(exc).__name__}: "
                         f"{exc})\n")


def _bounded(work: Any) -> None:
    thread = threading.Thread(target=_quietly, args=(work,), daemon=True,
                              name="tracestore-exit-flush")
    thread.start()
    thread.join(EXIT_FLUSH_S)


__all__ = ["EXIT_DETAIL", "flush_transports", "watch_recorder", "watch_session",
           "watch_transport"]
