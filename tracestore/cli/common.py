"""What every CLI command shares: the Typer app, the ``--db`` option, error handling,
JSON output and terminal-safe rendering of untrusted text.

How to add a command module: create ``tracestore/cli/<name>_cmds.py``, import ``app`` from
here, decorate functions with ``@app.command()`` and ``@handles_errors``, and import the module
in ``tracestore/cli/__init__.py``.  Commands stay thin: parse options, call the library, render.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

from tracestore.cli.lazy import rich_console, rich_name
from tracestore.errors import InputError, TracestoreError
from tracestore.text.neutralize import visible
from tracestore.store import ENV_VAR
from tracestore.store.engine_names import database_name  # noqa: F401  (re-exported: commands name their database)

if TYPE_CHECKING:  # SQLAlchemy and the pydantic models load only in commands that use them
    from tracestore.store.log import EventStore

app = typer.Typer(
    name="tracestore",
    help="Event-sourced trace store and review tool for streamed LLM answers.",
    no_args_is_help=True,
    # Plain Click help: Typer's Rich help formatter imports ~140 ms of Rich and Markdown
    # modules on every `--help`, doubling start-up for a page of text.
    rich_markup_mode=None,
    add_completion=True,  # --install-completion, --show-completion
    pretty_exceptions_enable=False,
)

def _print_version(value: bool) -> None:
    if value:
        from tracestore import __version__

        sys.stdout.write(f"tracestore {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print the tracestore version and exit.")] = False) -> None:
    """Event-sourced trace store and review tool for streamed LLM answers."""


# Rich loads when something is printed (see cli/lazy.py).  The type checker sees the real
# class (a lazy stand-in is a variable, not a type); the program gets the stand-in.
if TYPE_CHECKING:
    from rich.text import Text
else:
    Text = rich_name("rich.text", "Text")
console = rich_console(highlight=False, soft_wrap=True)
err_console = rich_console(stderr=True, highlight=False, soft_wrap=True)

DbOption = Annotated[
    Optional[str],
    typer.Option("--db", envvar=ENV_VAR, show_envvar=True,
                 help="Database URL (sqlite:///file.db, postgresql://…) or a SQLite file path. "
                      "Default: tracestore.db in the working directory."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(func: F) -> F:
    """Turn a ``TracestoreError`` into one sentence on stderr and its exit code.

    Bad input never produces a traceback.  With ``--json`` the error is a JSON object on
    stderr as well, so scripts can read the stable code.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _check_text_arguments(kwargs)
            return func(*args, **kwargs)
        except TracestoreError as exc:
            if exc.code in LOG_NOT_FOUND and "db" in kwargs:
                name_database(exc, kwargs["db"])
            report_error(exc, as_json=bool(kwargs.get("as_json")))
            raise typer.Exit(exc.exit_code) from None
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] == "tracestore":
                raise  # our own module missing is a broken install: a bug, reported as one
            wrapped = missing_dependency(exc.name or "?")
            report_error(wrapped, as_json=bool(kwargs.get("as_json")))
            raise typer.Exit(wrapped.exit_code) from None
        except BrokenPipeError:  # `tracestore events | head`: the reader left; not an error
            _silence_stdout()
            raise typer.Exit(0) from None
        except OSError as exc:  # a file we were told to read or write
            wrapped = InputError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
                                 code="file_error")
            report_error(wrapped, as_json=bool(kwargs.get("as_json")))
            raise typer.Exit(wrapped.exit_code) from None

    return wrapper  # type: ignore[return-value]


#: Import name → the install line that brings it (a package whose import name differs from
#: its distribution's, or that only an extra brings).
_INSTALL_LINES = {
    "psycopg": "pip install 'tracestore[postgres]'",
    "psycopg_binary": "pip install 'tracestore[postgres]'",
}


def missing_dependency(module: str) -> InputError:
    """The error for a Python package this command imports but the environment lacks."""
    top = module.partition(".")[0]
    line = _INSTALL_LINES.get(top, f"pip install --upgrade tracestore  (or: pip install {top})")
    return InputError(f"this command needs the Python package {top!r}, which is not "
                      f"installed here: {line}", code="missing_dependency", module=top)


def _check_text_arguments(kwargs: dict[str, Any]) -> None:
    """Ids and names given on the command line must be text: bytes that are not UTF-8 arrive
    as lone surrogates (Python's surrogateescape) and cannot be stored, hashed or printed
    (they ended in exit 70).  File paths are ``Path`` values and may hold any bytes."""
    for name, value in kwargs.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if isinstance(item, str) and any("\udc80" <= c <= "\udcff" for c in item):
                raise InputError(f"--{name.replace('_', '-')} is not UTF-8 text",
                                 code="invalid_argument", argument=name)


#: Not-found codes for things looked up in the log: their message names the database, so
#: a command run in the wrong folder (or with the wrong --db) says where it looked.
LOG_NOT_FOUND = frozenset({"attempt_not_found", "trace_not_found"})


def name_database(exc: TracestoreError, db: str | None) -> None:
    """"no attempt 'x' in the log" → "… in the log of DATABASE": the wrong folder shows."""
    name = database_name(db)
    exc.message = f"{exc.message} (database {name})"
    exc.context.setdefault("database", name)


def _silence_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def json_text(value: Any, **options: Any) -> str:
    """The one JSON escaper (``tracestore.review.escape.json_text``), imported when used:
    the review package is not loaded for ``--help``."""
    from tracestore.review.escape import json_text as escaped

    return escaped(value, **options)


def report_error(exc: TracestoreError, *, as_json: bool) -> None:
    """The one place errors are printed: passwords masked (``tracestore.text.masking``), text
    neutralized."""
    from tracestore.text.masking import mask_context, mask_secrets

    if as_json:
        sys.stderr.write(json_document(mask_context(exc.to_dict())) + "\n")
    else:
        err_console.print(Text.assemble(("error", "bold red"), f"[{exc.code}]: ",
                                        safe_text(mask_secrets(exc.message))))


@contextmanager
def open_store(db: str | None, *, create: bool = True, read_only: bool = False,
               ) -> Iterator[EventStore]:
    """Open (and on first use migrate) the store named by ``--db`` / ``$TRACESTORE_DB``.

    Read-only commands pass ``create=False``: a mistyped path must not leave a new empty
    database behind and report "0 events"; it is ``no_store`` (exit 4).  Commands that
    only read pass ``read_only=True`` as well: a SQLite file is opened read-only, so an
    archived store on a read-only mount still verifies.
    """
    from tracestore.store.engine import is_memory_sqlite, resolve_url
    from tracestore.store.log import EventStore

    if is_memory_sqlite(resolve_url(db)):
        # An in-memory database ends with the command: "11 events at positions 1-11" and
        # nothing kept.  The library accepts it (tests); the CLI refuses it.
        raise InputError("--db sqlite:// is an in-memory database: it is gone when the "
                         "command ends, so nothing would be kept; name a file "
                         "(sqlite:///file.db)", code="memory_db_refused")
    store = EventStore(db, create=create, read_only=read_only)
    try:
        yield store
    finally:
        store.close()


def trace_of_attempt(store: EventStore, attempt_id: str, *, upto: int | None = None,
                     code: str = "attempt_not_found") -> str:
    """The trace an attempt belongs to, from the ``attempt.started`` that opens its stream.

    Raises ``NotFound`` with ``code`` when the log (as of ``upto``) has no such attempt.
    """
    from tracestore.api import Store

    return Store(store).trace_of(attempt_id, upto=upto, code=code)


def json_document(value: Any) -> str:
    """The one form of every JSON document the CLI writes (docs/json.md): one line, no
    indentation, ``, `` and ``: `` between items, untrusted text escaped by the one JSON
    escaper (``review.escape.json_text``: no C1 control, DEL, bidi override, line separator
    or lone surrogate is written raw)."""
    return json_text(value, indent=None, default=str)


def emit_json(value: Any) -> None:
    """One JSON document on stdout (never through Rich, which would wrap or style it)."""
    sys.stdout.write(json_document(value) + "\n")


def emit_json_line(value: Any) -> None:
    """One line of a JSON-lines stream (``events --json``): the same form as ``emit_json``
    (one form for every JSON output)."""
    sys.stdout.write(json_document(value) + "\n")


def safe_text(value: Any, *, keep_newlines: bool = False, mark_backslashes: bool = False) -> str:
    """Untrusted text made inert for a terminal: controls shown as ``\\xNN`` escapes.

    With ``mark_backslashes`` a literal backslash is doubled first, so text that *spells*
    ``\\x1b`` reads ``\\\\x1b`` and stays distinguishable from a real ESC (tables use it).
    Rich markup is not interpreted because callers wrap the result in ``Text`` (never in a
    markup string); use ``term_text`` for that.
    """
    text = str(value)
    if mark_backslashes:
        text = text.replace("\\", "\\\\")
    if not keep_newlines:
        text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\t", "\\t")
    # The one neutralizer (C0/C1, DEL, bidi controls, U+2028/9, lone surrogates), as every
    # other output uses it.
    return visible(text, keep="\n\t" if keep_newlines else "")


def term_text(value: Any, style: str = "", *, limit: int | None = None,
              json_quoted: bool = False) -> Text:
    """A Rich ``Text`` cell holding untrusted text literally (no markup, no controls).

    Backslashes are doubled so a literal ``\\x1b`` never looks like an escaped control,
    except in ``json_quoted`` cells, whose text JSON already escaped (there ``\\\\`` is
    already the literal backslash).
    """
    text = safe_text(value, mark_backslashes=not json_quoted)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return Text(text, style=style)
