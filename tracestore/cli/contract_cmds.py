"""Contract commands: ``tracestore contract check`` (seed 004's regression fixtures).

Thin: read the files, call ``tracestore.contracts.regression``, print one line per case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tracestore.cli.common import Text  # Rich's, loaded on first use
from tracestore.cli.common import JsonOption, app, console, emit_json, handles_errors, term_text

contract_app = typer.Typer(help="Output contracts for structured answers (seeds 000 and 004).",
                           no_args_is_help=True)
app.add_typer(contract_app, name="contract")

ContractOption = Annotated[Path, typer.Option(
    "--contract", help="Contract JSON file (see fixtures/contracts/).")]


@contract_app.command("check")
@handles_errors
def check(
    file: Annotated[Path, typer.Argument(help="Regression cases, one JSON object per line: "
                                         "name, raw or patch, optional stop and max_bytes, "
                                         "expect.")],
    contract: ContractOption,
    binding: Annotated[Optional[Path], typer.Option(
        help="Request binding whose selected_context cited ids must come from.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Replay regression cases against a contract; exit 1 when any case's code differs."""
    from tracestore.cli.store_cmds import read_binding, read_contract, read_input
    from tracestore.contracts.binding import context_of
    from tracestore.contracts.regression import parse_cases, run_cases

    loaded = read_contract(contract)
    bound = read_binding(binding)
    try:
        text = read_input(file).decode("utf-8")
    except UnicodeDecodeError as exc:
        from tracestore.errors import InputError

        raise InputError(f"{file} is not UTF-8 text", code="invalid_regression_case") from exc
    results = run_cases(loaded, parse_cases(text),
                        context_of(bound) if bound is not None else None)
    failed = [r for r in results if not r.passed]
    if as_json:
        emit_json({"contract": loaded.name, "cases": [r.to_dict() for r in results],
                   "failed": len(failed)})
    else:
        for r in results:
            mark = Text("pass", style="green") if r.passed else Text("FAIL", style="bold red")
            console.print(Text.assemble(mark, " ", term_text(r.name), f": expect {r.expect}, "
                                        f"got {r.got}"))
        console.print(f"{len(results) - len(failed)} of {len(results)} cases pass "
                      f"({loaded.name})")
    if failed:
        raise typer.Exit(1)
