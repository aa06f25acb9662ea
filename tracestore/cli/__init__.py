"""The ``tracestore`` command line: a thin Typer layer over the library.

Each ``*_cmds`` module registers its commands on the shared ``app`` when imported.
``main`` (the ``tracestore`` script) imports only the module of the command it runs --
Typer inspects the signature of every registered command on each start, which for all of
them cost more than a small command's own work.  ``tracestore.cli.app`` (tests, embedding)
has every command.
"""

from __future__ import annotations

import importlib
from typing import Any

from tracestore.cli import common as _common
from tracestore.cli.help import install as install_help

# Command modules, in help order.  A module that is not present yet is skipped so the CLI
# keeps working while features land one at a time.
_COMMAND_MODULES = (
    "store_cmds", "log_cmds", "bulk_cmds", "checkpoint_cmds", "release_cmds", "review_cmds",
    "evidence_cmds", "reviewer_cmds", "queue_cmds", "judge_cmds",
    "recording_cmds", "contract_cmds", "agent_cmds", "report_cmds", "export_cmds",
    "proxy_cmds", "serve_cmds", "mock_cmds", "store_admin_cmds",
)
# Where each command lives (tests/test_startup.py checks this against the modules).
COMMAND_HOMES = {
    "init": "store_cmds", "ingest": "store_cmds",
    "events": "log_cmds", "attempts": "log_cmds", "verify": "log_cmds",
    "ingest-batch": "bulk_cmds", "checkpoint": "checkpoint_cmds",
    "release": "release_cmds", "replay": "release_cmds", "audit": "release_cmds",
    "review": "review_cmds", "templates": "review_cmds",
    "evidence": "evidence_cmds", "reviewer": "reviewer_cmds", "reviews": "queue_cmds", "review-batch": "queue_cmds",
    "judge": "judge_cmds",
    "destination": "recording_cmds", "task": "recording_cmds",
    "scenario-schema": "recording_cmds", "contract": "contract_cmds", "grade": "agent_cmds",
    "report": "report_cmds", "export": "export_cmds", "import": "export_cmds",
    "proxy": "proxy_cmds", "serve": "serve_cmds", "mock": "mock_cmds",
    "store": "store_admin_cmds",
}


def register(modules: tuple[str, ...] = _COMMAND_MODULES) -> Any:
    """Import the command modules (all by default); return the app they registered on."""
    for name in modules:
        try:
            importlib.import_module(f"tracestore.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tracestore.cli.{name}":
                raise
    # Plain help pages and JSON usage errors for every command registered so far.
    install_help(_common.app)
    return _common.app


def only_command(app: Any, name: str) -> Any:
    """A copy of ``app`` holding only the command (or command group) ``name``: Typer turns
    every registered command's signature into Click parameters on each start, and a
    module registers several (``release_cmds``: release, replay, audit).  Running
    ``name`` sees the same command, help and errors; ``app`` itself is left whole."""
    import copy

    lone = copy.copy(app)
    lone.registered_commands = [
        info for info in app.registered_commands
        if (info.name or info.callback.__name__.replace("_", "-")) == name]
    lone.registered_groups = [group for group in app.registered_groups if group.name == name]
    return lone


def pydantic_plugin_entry_points_absent() -> bool:
    """True only when no installed distribution can declare a pydantic plugin: no
    ``entry_points.txt`` of a ``*.dist-info`` / ``*.egg-info`` folder on ``sys.path``
    mentions ``pydantic``, every ``sys.path`` entry is a plain folder (no zip, no egg), and
    no import finder but the standard one lists distributions.  A superset of what
    ``importlib.metadata.entry_points(group="pydantic")`` reads, read without building its
    distribution objects: ~1 ms instead of pydantic's 4-7 ms scan.  Any doubt is False."""
    import os
    import sys
    from importlib.machinery import PathFinder

    if any(hasattr(finder, "find_distributions") and finder is not PathFinder
           for finder in sys.meta_path):
        return False
    for entry in sys.path:
        if not isinstance(entry, str):
            return False
        folder = entry or "."
        if folder.lower().endswith(".egg") or (os.path.exists(folder)
                                               and not os.path.isdir(folder)):
            return False
        try:
            children = os.scandir(folder)
        except OSError:
            continue
        with children:
            for child in children:
                if not child.name.lower().endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(child.path, "entry_points.txt"), "rb") as f:
                        if b"pydantic" in f.read().lower():
                            return False
                except FileNotFoundError:
                    continue
                except OSError:
                    return False
    return True


def skip_empty_pydantic_plugin_scan() -> None:
    """Spare pydantic its plugin scan when there is provably nothing to find.

    pydantic looks for plugins (entry points of group ``pydantic``, e.g. logfire's) the
    first time it builds a validator, by listing every installed distribution: 4-7 ms of
    ``release``'s start-up.  When ``pydantic_plugin_entry_points_absent()`` shows there is
    none, its cache is set to what the scan would have found -- no plugins.  Any plugin
    installed means pydantic scans and loads it as before (tracestore's validations stay
    visible to it), and ``PYDANTIC_DISABLE_PLUGINS`` is honoured as before (pydantic reads
    it first on every call).  Nothing is changed if pydantic's loader is not as expected."""
    try:
        from pydantic.plugin import _loader
    except ImportError:  # pragma: no cover - another pydantic layout: let it scan
        return
    if getattr(_loader, "_plugins", False) is None and pydantic_plugin_entry_points_absent():
        _loader._plugins = {}


def _sigterm_as_interrupt() -> None:
    """SIGTERM stops a command as Ctrl-C does: its open transaction rolls back, files it was
    writing are removed, and it exits with Ctrl-C's status, instead of dying mid-write
    with nothing cleaned up.  (``serve`` and ``proxy`` handle SIGTERM themselves.)"""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, interrupt)


def __getattr__(name: str) -> Any:
    if name == "app":
        return register()
    raise AttributeError(f"module 'tracestore.cli' has no attribute {name!r}")


def main() -> None:
    """Entry point: run the app; an unexpected exception is reported as a bug, briefly."""
    import os
    import sys

    if sys.argv[1:] == ["--version"]:
        # Exactly what the eager --version option prints, without building every command.
        from tracestore import __version__

        sys.stdout.write(f"tracestore {__version__}\n")
        return
    # The first argument names the command unless it is an option (--help, --version)
    # or unknown (then Click lists every command, so all are registered).
    home = COMMAND_HOMES.get(sys.argv[1]) if len(sys.argv) > 1 else None
    app = register((home,) if home else _COMMAND_MODULES)
    if home:
        app = only_command(app, sys.argv[1])
        if "--help" not in sys.argv:  # the command runs: it will build validators
            skip_empty_pydantic_plugin_scan()
    # Everything loaded so far (Typer, Click, the command's module) lives as long as the
    # process: move it out of the collector's sight.  A command's own imports (SQLAlchemy,
    # pydantic, the models) then trigger young collections that no longer rescan those
    # long-lived objects: the full collections of start-up were ~15% of `release --json`.
    # The collector still runs for everything allocated from here on.
    import gc

    _sigterm_as_interrupt()
    gc.freeze()
    try:
        app(prog_name="tracestore")  # also under python -m tracestore
    except Exception as exc:  # noqa: BLE001 - last resort: bugs, not bad input
        if os.environ.get("TRACESTORE_DEBUG"):
            raise
        from tracestore.text.masking import mask_secrets

        sys.stderr.write(f"internal error (a tracestore bug): {type(exc).__name__}: "
                         f"{mask_secrets(str(exc))}\n"
                         "set TRACESTORE_DEBUG=1 to see the traceback\n")
        sys.exit(70)


__all__ = ["COMMAND_HOMES", "app", "main", "only_command", "register"]
