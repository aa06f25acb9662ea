"""The ``tracestore`` command line: a thin Typer layer over the library.

Each ``*_cmds`` module registers its commands on the shared ``app`` when imported.
"""

from __future__ import annotations

import importlib

from tracestore.cli.common import app

# Command modules, in help order.  A module that is not present yet is skipped so the CLI
# keeps working while features land one at a time.
_COMMAND_MODULES = ("store_cmds", "release_cmds", "review_cmds")

for _name in _COMMAND_MODULES:
    try:
        importlib.import_module(f"tracestore.cli.{_name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"tracestore.cli.{_name}":
            raise


def main() -> None:
    app()


__all__ = ["app", "main"]
