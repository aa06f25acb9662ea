"""tracestore: an event-sourced trace store and review tool for streamed LLM answers."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tracestore")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
