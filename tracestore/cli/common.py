"""What every CLI command shares: the Typer app, the ``--db`` option, error handling,
JSON output and terminal-safe rendering of untrusted text.

How to add a command module: create ``tracestore/cli/<name>_cmds.py``, import ``app`` from
here, decorate functions with ``@app.command()`` and ``@handles_errors``, and import the module
in ``tracestore/cli/__init__.py``.  Commands stay thin: parse options, call the library, render.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from tracestore.errors import InputError, NotFound, TracestoreError
from tracestore.store import ENV_VAR

if TYPE_CHECKING:  # SQLAlchemy and the pydantic models load only in commands that use them
    from tracestore.store.log import EventStore

app = typer.Typer(
    name="tracestore",
    help="Event-sourced trace store and review tool for streamed LLM answers.",
    no_args_is_help=True,
    # Plain Click help: Typer's Rich help formatter imports ~140 ms of Rich and Markdown
    # modules on every `--help`, doubling start-up for a page of text.
    rich_markup_mode=None,
    add_completion=False,
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


console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

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
            return func(*args, **kwargs)
        except TracestoreError as exc:
            report_error(exc, as_json=bool(kwargs.get("as_json")))
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:  # `tracestore events | head`: the reader left; not an error
            _silence_stdout()
            raise typer.Exit(0) from None
        except OSError as exc:  # a file we were told to read or write
            wrapped = InputError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
                                 code="file_error")
            report_error(wrapped, as_json=bool(kwargs.get("as_json")))
            raise typer.Exit(wrapped.exit_code) from None

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def report_error(exc: TracestoreError, *, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(json.dumps(exc.to_dict(), ensure_ascii=False, default=str) + "\n")
    else:
        err_console.print(Text.assemble(("error", "bold red"), f"[{exc.code}]: ",
                                        safe_text(exc.message)))


@contextmanager
def open_store(db: str | None) -> Iterator[EventStore]:
    """Open (and on first use migrate) the store named by ``--db`` / ``$TRACESTORE_DB``."""
    from tracestore.store.log import EventStore

    store = EventStore(db)
    try:
        yield store
    finally:
        store.close()


def trace_of_attempt(store: EventStore, attempt_id: str, *, upto: int | None = None,
                     code: str = "not_found") -> str:
    """The trace an attempt belongs to, from the ``attempt.started`` that opens its stream.

    Raises ``NotFound`` with ``code`` when the log (as of ``upto``) has no such attempt.
    """
    from tracestore.events import AttemptStarted

    first = store.read(attempt_id=attempt_id, upto=upto, limit=1)
    started = first[0].event if first else None
    if not isinstance(started, AttemptStarted):
        raise NotFound(f"no attempt {attempt_id!r} in the log"
                       + (f" at or before position {upto}" if upto is not None else ""),
                       code=code, attempt_id=attempt_id)
    return started.trace_id


def emit_json(value: Any) -> None:
    """One JSON document on stdout (never through Rich, which would wrap or style it)."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")


def emit_json_line(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
                     + "\n")


# C0/C1 controls (incl. ESC, which starts ANSI sequences), DEL, and bidi overrides that can
# make a terminal line read differently from the bytes behind it.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_text(value: Any, *, keep_newlines: bool = False) -> str:
    """Untrusted text made inert for a terminal: controls shown as ``\\xNN`` escapes.

    Rich markup is not interpreted because callers wrap the result in ``Text`` (never in a
    markup string); use ``term_text`` for that.
    """
    text = str(value)
    if not keep_newlines:
        text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\t", "\\t")
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", text)


def term_text(value: Any, style: str = "", *, limit: int | None = None) -> Text:
    """A Rich ``Text`` cell holding untrusted text literally (no markup, no controls)."""
    text = safe_text(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return Text(text, style=style)
