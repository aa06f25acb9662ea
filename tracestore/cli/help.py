"""Help pages and usage errors as people expect them from a command-line tool.

Typer's plain help shows its internals: ``{file}`` and ``<list[Path]>`` for arguments,
``<str>``/``<int range>`` after every option, ``--approve / --no-approve [default:
no-approve]``, command summaries cut mid-sentence with ``...``, words split at hyphens
(``anthropic-`` / ``messages``) and the docstrings' literal backticks.  The classes here
render the same information plainly (``FILE``, ``--limit N``, ``--format [md|json]``), and
a usage error on a command given ``--json`` is a JSON object, like every other error.

``install(app)`` applies them to every command registered so far (all command modules,
whoever wrote them), so no module has to remember.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from typing import Any

# These classes subclass Typer's Click classes, which are private API: typer is capped in
# pyproject.toml to the minor versions tested here (0.29 vendors Click as ``typer._click``;
# older ones depend on Click itself).  Raise the cap after running tests/test_cli*.py.
try:  # Typer >= 0.2x vendors its own Click
    from typer import _click as click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older Typer depends on Click itself
    import click  # type: ignore[no-redef]
    from click import UsageError  # type: ignore[assignment]
from typer.core import TyperCommand, TyperGroup

#: Option value names, by parameter name, where the upper-cased name would say less.
METAVARS = {
    "db": "URL", "out": "FILE", "task": "FILE", "cases": "FILE", "html": "FILE",
    "chunk_size": "BYTES", "after": "POSITION", "at": "POSITION", "upto": "POSITION",
    "limit": "N", "evidence": "POSITION", "set_": "FIELD=VALUE", "reviewer": "NAME",
    "template": "NAME", "provider": "NAME", "endpoint": "URL", "fmt": "FORMAT",
    "contract": "FILE", "binding": "FILE",
}


def clean(text: str | None) -> str:
    """Help text without reStructuredText/Markdown backticks."""
    return (text or "").replace("``", "").replace("`", "")


def first_sentence(text: str) -> str:
    """The summary line of a command: its first sentence, never cut in the middle."""
    paragraph = clean(inspect.cleandoc(text or "")).split("\n\n", 1)[0].replace("\n", " ")
    match = re.match(r"(.+?[.!?])(\s|$)", paragraph)
    return (match.group(1) if match else paragraph).strip()


class Formatter(click.HelpFormatter):
    """Definition lists wrap at spaces only: no word is split at a hyphen or an underscore."""

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        if not rows:
            return
        first_col = min(max(len(r[0]) for r in rows), col_max) + col_spacing
        indent = " " * self.current_indent
        width = max(self.width - first_col - self.current_indent - 2, 20)
        for first, second in rows:
            lines = textwrap.wrap(second, width, break_on_hyphens=False,
                                  break_long_words=False) or [""]
            if len(first) <= first_col - col_spacing:
                self.write(f"{indent}{first:<{first_col}}{lines[0]}".rstrip() + "\n")
                rest = lines[1:]
            else:
                self.write(f"{indent}{first}\n")
                rest = lines
            for line in rest:
                self.write(f"{indent}{'':<{first_col}}{line}\n")


class Context(click.Context):
    formatter_class = Formatter


class JsonUsageError(UsageError):
    """A usage error reported as ``{"error": "usage_error", …}`` (the command had --json)."""

    def __init__(self, original: UsageError) -> None:
        super().__init__(original.format_message(), original.ctx)
        self.param = getattr(original, "param", None)

    def show(self, file: Any = None) -> None:
        doc = {"error": "usage_error", "message": self.format_message()}
        if self.ctx is not None:
            doc["command"] = self.ctx.command_path
        if self.param is not None and getattr(self.param, "name", None):
            doc["parameter"] = self.param.name
        from tracestore.cli.common import json_document  # the one JSON form (docs/json.md)

        sys.stderr.write(json_document(doc) + "\n")


def _metavar(param: Any) -> str:
    if param.metavar:
        return param.metavar
    choices = _choices(param)
    if choices:
        return "[" + "|".join(choices) + "]"
    return METAVARS.get(param.name, param.name.strip("_").upper())


def _choices(param: Any) -> list[str]:
    desc = getattr(param, "type_descriptor", None)
    raw = (desc.choices if desc is not None and desc.is_choice else
           getattr(getattr(param, "type", None), "choices", None)) or ()
    return [str(getattr(c, "value", c)) for c in raw]


def _default(param: Any) -> str | None:
    default = param.default
    if (param.is_flag or param.show_default is False or callable(default)
            or default in (None, "", (), [])):
        return None
    return str(getattr(default, "value", default))


def option_record(param: Any) -> tuple[str, str] | None:
    if param.hidden:
        return None
    name = ", ".join(param.opts)
    if not (param.is_flag or param.count):
        name += " " + _metavar(param)
    extra = []
    default = _default(param)
    if default is not None:
        extra.append(f"default: {default}")
    if param.show_envvar and param.envvar:
        envvar = param.envvar if isinstance(param.envvar, str) else ", ".join(param.envvar)
        extra.append(f"env var: {envvar}")
    if param.required:
        extra.append("required")
    help_text = clean(param.help)
    if extra:
        help_text = f"{help_text}  [{'; '.join(extra)}]".strip()
    return name, help_text


def argument_name(param: Any) -> str:
    name = param.metavar or param.name.strip("_").upper()
    return name + ("..." if param.nargs != 1 else "")


class Command(TyperCommand):
    context_class = Context

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        text = clean(inspect.cleandoc(self.help or "")).partition("\f")[0]
        if text:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(text)

    def get_short_help_str(self, limit: int = 45) -> str:
        return clean(self.short_help) if self.short_help else first_sentence(self.help or "")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # (``hidden`` and ``help`` are Typer's on arguments too, Click's on options only)
        params = [p for p in self.get_params(ctx) if not getattr(p, "hidden", False)]
        args = [(argument_name(p), clean(getattr(p, "help", None))) for p in params
                if p.param_type_name == "argument"]
        opts = [r for p in params if p.param_type_name == "option"
                for r in [option_record(p)] if r is not None]
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        wants_json = "--json" in args
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            # Typer words a bad choice "Value error, 'xml' is not one of …": the first two
            # words are its validator's, not something a user needs to read.
            exc.message = exc.message.replace("Value error, ", "")
            if wants_json and not isinstance(exc, JsonUsageError):
                raise JsonUsageError(exc) from exc
            raise


class Group(TyperGroup):
    context_class = Context

    def get_short_help_str(self, limit: int = 45) -> str:
        return clean(self.short_help) if self.short_help else first_sentence(self.help or "")

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        Command.format_help_text(self, ctx, formatter)  # type: ignore[arg-type]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        Command.format_options(self, ctx, formatter)  # type: ignore[arg-type]
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[str, list[tuple[str, str]]] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                section = WORKFLOW_OF.get(name, "Other commands")
                rows.setdefault(section, []).append((name, command.get_short_help_str()))
        for section, names in [*WORKFLOW, ("Other commands", ())]:
            if section in rows:
                order = {name: n for n, name in enumerate(names)}
                with formatter.section(section):
                    formatter.write_dl(sorted(rows[section], key=lambda r: order.get(r[0], 99)))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            if args and self.get_command(ctx, args[0]) is None and not args[0].startswith("-"):
                hint = nearest_command(args[0], self.list_commands(ctx))
                if hint and "Did you mean" not in exc.message:
                    exc.message = f"{exc.message} {hint}"
            if "--json" in args and not isinstance(exc, JsonUsageError):
                raise JsonUsageError(exc) from exc
            raise


#: The top-level help lists commands in the order a reviewer works: record, find, judge,
#: review, export, then the store's own upkeep.
WORKFLOW: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Record", ("ingest", "ingest-batch", "replay", "proxy", "destination", "task",
                "evidence", "import")),
    ("Find", ("attempts", "events", "release", "audit", "report", "serve")),
    ("Judge", ("judge", "contract", "grade")),
    ("Review", ("review", "review-batch", "reviews", "reviewer", "templates")),
    ("Export", ("export",)),
    ("Test your app", ("mock",)),
    ("The store", ("init", "verify", "checkpoint", "store", "scenario-schema")),
)
WORKFLOW_OF = {name: section for section, names in WORKFLOW for name in names}

#: Words people type for a command that has another name here.
ALIASES = {"queue": "attempts", "list": "attempts", "desk": "serve", "log": "events",
           "sign": "checkpoint", "decision": "release", "approve": "review",
           "record": "ingest", "otlp": "export"}


def nearest_command(typed: str, names: list[str]) -> str:
    """``Did you mean …?`` for an unknown command: a known alias first, then the closest
    spelling; empty when nothing is close."""
    import difflib

    if typed in ALIASES and ALIASES[typed] in names:
        return f"Did you mean '{ALIASES[typed]}'?"
    close = difflib.get_close_matches(typed, names, n=2, cutoff=0.6)
    if not close:
        return ""
    return "Did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def install(app: Any) -> None:
    """Use these classes for ``app``, its commands and its sub-apps (recursively)."""
    if app.info.cls in (None, TyperGroup) or not isinstance(app.info.cls, type):
        app.info.cls = Group
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = Command
    for group in app.registered_groups:
        if not isinstance(group.cls, type) or group.cls is TyperGroup:
            group.cls = Group
        install(group.typer_instance)
