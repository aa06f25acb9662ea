"""Rich, imported when something is printed, not when a command module loads.

Every command module builds Rich text and tables, but ``--json`` output and ``--help``
print none: importing ``rich.console`` and ``rich.table`` up front cost about a fifth of a
bare ``import sqlalchemy, pydantic, typer`` on every start.  ``Lazy`` stands in for a
module attribute (a class, a module, a console) and imports it on first use; calling it,
reading its attributes and ``isinstance`` go to the real object.  Pass ``x.resolve()``
where a library needs the real object itself (``Progress(console=...)``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


class Lazy:
    __slots__ = ("_factory", "_value")

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._value: Any = None

    def resolve(self) -> Any:
        value = self._value
        if value is None:
            value = self._value = self._factory()
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self.resolve())


def rich_name(module: str, name: str | None = None) -> Lazy:
    """``rich.<module>.<name>`` (or the module itself), imported on first use."""
    def load() -> Any:
        found = importlib.import_module(module)
        return found if name is None else getattr(found, name)
    return Lazy(load)


def rich_console(**options: Any) -> Lazy:
    """A ``rich.console.Console(**options)`` created on first use."""
    return Lazy(lambda: importlib.import_module("rich.console").Console(**options))


__all__ = ["Lazy", "rich_console", "rich_name"]
