"""Recording real applications: the live recorder API and the SDK capture wrappers.

``Recorder`` (``from tracestore import Recorder``) appends an application's stream attempts
as they happen; see ``docs/recording.md``.  Names are imported lazily so that importing
``tracestore`` (or running ``tracestore --help``) does not load SQLAlchemy.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "Recorder": "tracestore.recording.recorder",
    "TraceRecorder": "tracestore.recording.recorder",
    "AttemptRecorder": "tracestore.recording.recorder",
    "LiveCapture": "tracestore.recording.stream",
    "Turn": "tracestore.recording.turn",
    "AttemptHandle": "tracestore.recording.turn",
    "attempt_of": "tracestore.recording.turn",
    "record_realtime": "tracestore.recording.realtime",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tracestore.recording' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = list(_EXPORTS)
