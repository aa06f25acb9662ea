"""tracestore: an event-sourced trace store and review tool for streamed LLM answers."""

# The version is a constant (pyproject.toml reads it from here), not importlib.metadata:
# that import alone cost ~50 ms of every `tracestore` start-up.
from tracestore._version import __version__


def __getattr__(name: str) -> object:
    # Lazy: `from tracestore import Recorder` loads the recorder only when asked, so
    # `import tracestore` and `tracestore --help` stay light (no SQLAlchemy, no pydantic).
    if name == "Recorder":
        from tracestore.recording.recorder import Recorder

        return Recorder
    raise AttributeError(f"module 'tracestore' has no attribute {name!r}")


__all__ = ["Recorder", "__version__"]
