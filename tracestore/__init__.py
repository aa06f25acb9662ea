"""tracestore: an event-sourced trace store and review tool for streamed LLM answers.

The public API (docs/api.md)::

    from tracestore import open_store, Recorder

``open_store`` gives a ``Store`` with typed reads (attempts, release decisions, audit,
review records, events, verify); ``Recorder`` records live attempts, ``AgentRunRecorder``
agent runs.  Everything else is importable from its package, but these names are the ones
kept stable.
"""

from __future__ import annotations

import sys

# typing costs ~2 ms of a bare `import tracestore`; type checkers treat this name as True.
TYPE_CHECKING = False

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


#: Deprecated import paths (these modules moved; kept for one release so callers can move, see
#: docs/api.md "Deprecated paths"): the old name imports the new module itself.
MOVED = {
    "tracestore.event_codec": "tracestore.events.codec",
    "tracestore.event_envelope": "tracestore.events.envelope",
    "tracestore.event_models": "tracestore.events.models",
    "tracestore.ingest_decide": "tracestore.ingest.decide",
    "tracestore.ingest_fast": "tracestore.ingest.fast",
    "tracestore.ingest_plan": "tracestore.ingest.plan",
    "tracestore.ingest_projection": "tracestore.ingest.projection",
    "tracestore.replay": "tracestore.ingest.replay",
    "tracestore.bulk": "tracestore.store.bulk",
    "tracestore.masking": "tracestore.text.masking",
    "tracestore.neutralize": "tracestore.text.neutralize",
    "tracestore.agent.ingest": "tracestore.ingest.agent",
    "tracestore.agent.release": "tracestore.projections.agent_release",
    "tracestore.agent.review": "tracestore.review.agent",
    "tracestore.agent.recorder": "tracestore.recording.agent",
    "tracestore.contracts.envelope": "tracestore.projections.envelope",
}


class _MovedModules:
    """Finds the old names in ``MOVED`` (after every real file: a module that exists wins)
    and loads each as the new module object, so attributes and patches agree and nothing is
    printed.  An import hook rather than a file per old path: a file there would make git
    see each move as an edit, and every other branch's change to the old file a conflict."""

    @classmethod
    def find_spec(cls, name: str, path: object = None, target: object = None) -> object:
        if name not in MOVED:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, cls)  # type: ignore[arg-type]  # a Loader by duck typing

    _specs: dict[str, object] = {}

    @classmethod
    def create_module(cls, spec: object) -> object:
        from importlib import import_module

        module = import_module(MOVED[spec.name])  # type: ignore[attr-defined]
        cls._specs[spec.name] = module.__spec__  # type: ignore[attr-defined]
        return module

    @classmethod
    def exec_module(cls, module: object) -> None:
        # The import system stamped the alias's spec on the module: give it back its own.
        module.__spec__ = cls._specs.pop(module.__spec__.name)  # type: ignore[attr-defined]


if not any(finder is _MovedModules for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules)  # type: ignore[arg-type]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tracestore' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)


__all__ = ["AgentRunRecorder", "Attempt", "Recorder", "Release", "Store", "Verification",
           "__version__", "open_store"]
