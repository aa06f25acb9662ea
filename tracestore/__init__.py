"""tracestore: an event-sourced trace store and review tool for streamed LLM answers."""

# The version is a constant (pyproject.toml reads it from here), not importlib.metadata:
# that import alone cost ~50 ms of every `tracestore` start-up.
from tracestore._version import __version__

__all__ = ["__version__"]
