"""Start-up stays light: `--help` and `--version` import no database, model or metadata code.

Each check runs the real entry point in a fresh interpreter (this test process has long since
imported everything) and reads ``sys.modules`` after it exits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import pytest

# Packages `tracestore --help` / `--version` must not load: the database layer, the pydantic
# event models (and pydantic itself), package metadata, Typer's Rich help formatter.
HEAVY = ("sqlalchemy", "pydantic", "importlib.metadata", "tracestore.events",
         "tracestore.store.log", "tracestore.ingest", "tracestore.wire", "tracestore.review",
         "tracestore.projections", "typer.rich_utils", "alembic")
# A command's own help goes through Typer's parameter coercion, which is built on pydantic
# (and pydantic's plugin loader reads importlib.metadata): Typer's cost, not ours.
TYPER_OWN = ("pydantic", "importlib.metadata")

PROBE = """
import json, sys
sys.argv = ["tracestore", *json.loads(sys.argv[1])]
from tracestore.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stdout.flush()
sys.stderr.write("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\\n")
"""


def run_cli(*args: str) -> tuple[str, int, set[str]]:
    """(stdout and stderr text, exit code, modules loaded) of ``tracestore ARGS``."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))],
                          capture_output=True, text=True, timeout=60, check=False)
    *err, last = done.stderr.strip().splitlines()
    report = json.loads(last)
    return done.stdout + "\n".join(err), report["code"], set(report["modules"])


def loaded_heavy(modules: set[str], allowed: tuple[str, ...] = ()) -> list[str]:
    heavy = [h for h in HEAVY if h not in allowed]
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


@pytest.mark.parametrize("args, exit_code", [
    (("--help",), 0), ((), 2),  # no arguments: the help, with Click's usage exit code
])
def test_help_does_not_import_the_store_or_the_models(args: tuple[str, ...],
                                                      exit_code: int) -> None:
    out, code, modules = run_cli(*args)
    assert (code, loaded_heavy(modules)) == (exit_code, [])
    assert "Usage: tracestore" in out and "ingest" in out


@pytest.mark.parametrize("command", ["ingest", "ingest-batch", "events", "attempts", "verify", "release",
                                     "replay", "audit", "review", "templates"])
def test_a_command_help_does_not_import_the_store_or_the_models(command: str) -> None:
    out, code, modules = run_cli(command, "--help")
    assert (code, loaded_heavy(modules, allowed=TYPER_OWN)) == (0, [])
    assert f"Usage: tracestore {command}" in out


def test_version_does_not_import_the_store_or_the_models() -> None:
    out, code, modules = run_cli("--version")
    assert (code, loaded_heavy(modules)) == (0, [])


def test_version_is_the_installed_distribution_version() -> None:
    out, code, _ = run_cli("--version")
    assert (code, out) == (0, f"tracestore {version('tracestore')}\n")


def test_a_command_that_reads_the_store_still_loads_it(tmp_path) -> None:
    # The probe itself can see heavy modules: the check above is not vacuous.
    # (The store must exist: read-only commands never create one, issue 14.)
    from tracestore.store.log import EventStore

    EventStore(f"sqlite:///{tmp_path / 's.db'}").close()
    out, code, modules = run_cli("attempts", "--json", "--db", str(tmp_path / "s.db"))
    assert (code, json.loads(out)) == (0, {"attempts": []})
    assert {"sqlalchemy", "tracestore.store.log"} <= modules


def test_the_cli_default_template_is_the_review_default() -> None:
    from tracestore.cli.review_cmds import DEFAULT_TEMPLATE as cli_default
    from tracestore.review.templates import DEFAULT_TEMPLATE

    assert cli_default == DEFAULT_TEMPLATE
