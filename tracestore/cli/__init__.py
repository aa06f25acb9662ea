"""The ``tracestore`` command line: a thin Typer layer over the library.

Each ``*_cmds`` module registers its commands on the shared ``app`` when imported.
"""

from __future__ import annotations

import importlib

from tracestore.cli.common import app
from tracestore.cli.help import install as install_help

# Command modules, in help order.  A module that is not present yet is skipped so the CLI
# keeps working while features land one at a time.
_COMMAND_MODULES = (
    "store_cmds", "log_cmds", "bulk_cmds", "checkpoint_cmds", "release_cmds", "review_cmds",
    "recording_cmds", "contract_cmds", "agent_cmds", "report_cmds", "export_cmds",
)

for _name in _COMMAND_MODULES:
    try:
        importlib.import_module(f"tracestore.cli.{_name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"tracestore.cli.{_name}":
            raise

# Plain help pages and JSON usage errors for every command registered above.
install_help(app)


def main() -> None:
    """Entry point: run the app; an unexpected exception is reported as a bug, briefly."""
    import os
    import sys

    try:
        app(prog_name="tracestore")  # also under python -m tracestore
    except Exception as exc:  # noqa: BLE001 - last resort: bugs, not bad input
        if os.environ.get("TRACESTORE_DEBUG"):
            raise
        sys.stderr.write(f"internal error (a tracestore bug): {type(exc).__name__}: {exc}\n"
                         "set TRACESTORE_DEBUG=1 to see the traceback\n")
        sys.exit(70)


__all__ = ["app", "main"]
