"""tracestore: an event-sourced trace store and review tool for streamed LLM answers.

The public API (docs/api.md)::

    from tracestore import open_store, Recorder

``open_store`` gives a ``Store`` with typed reads (attempts, release decisions, audit,
review records, events, verify); ``Recorder`` records live attempts, ``AgentRunRecorder``
agent runs.  Everything else is importable from its package, but these names are the ones
kept stable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The version is a constant (pyproject.toml reads it from here), not importlib.metadata:
# that import alone cost ~50 ms of every `tracestore` start-up.
from tracestore._version import __version__

if TYPE_CHECKING:
    from tracestore.api import Attempt, Release, Store, Verification, open_store
    from tracestore.recording.agent import AgentRunRecorder
    from tracestore.recording.recorder import Recorder

#: Where each public name lives.  Lazy: `from tracestore import Recorder` loads the
#: recorder only when asked, so `import tracestore` and `tracestore --help` stay light (no
#: SQLAlchemy, no pydantic).
_HOMES = {
    "Recorder": "tracestore.recording.recorder",
    "AgentRunRecorder": "tracestore.recording.agent",
    "open_store": "tracestore.api",
    "Store": "tracestore.api",
    "Attempt": "tracestore.api",
    "Release": "tracestore.api",
    "Verification": "tracestore.api",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tracestore' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)


__all__ = ["AgentRunRecorder", "Attempt", "Recorder", "Release", "Store", "Verification",
           "__version__", "open_store"]
