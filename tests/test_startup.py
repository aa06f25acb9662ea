"""Start-up stays light: `--help` and `--version` import no database, model or metadata code.

Each check runs the real entry point in a fresh interpreter (this test process has long since
imported everything) and reads ``sys.modules`` after it exits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from clihelp import run

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
    assert sorted(m for m in modules if m.split(".")[0] == "rich") == []  # nothing printed


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


def test_release_json_loads_only_what_it_reads(tmp_path) -> None:
    # Issue 13: `release ATTEMPT --json` reads stored events and judges them.  It builds the
    # validators of the event types it reads (not all of them), and loads no decoder, no
    # review templates or renderers, and no grapheme regex (a contract-free attempt).
    from tracestore.events.models import MODELS

    db = tmp_path / "s.db"
    capture = Path(__file__).resolve().parent.parent / "fixtures/real/anthropic/text-basic.sse"
    assert run("ingest", str(capture), "--attempt", "a1", "--json", db=db)[0] == 0  # the store
    probe = PROBE.replace(
        'sys.stderr.write(', 'from tracestore.events.models import MODELS\n'
        'built = sorted(t for t, m in MODELS.items() if m.__pydantic_complete__)\n'
        'sys.stderr.write(json.dumps(built) + "\\n")\nsys.stderr.write(')
    done = subprocess.run([sys.executable, "-c", probe,
                           json.dumps(["release", "a1", "--json", "--db", str(db)])],
                          capture_output=True, text=True, timeout=60, check=False)
    *_, built_line, last = [line for line in done.stderr.splitlines() if line.strip()]
    report = json.loads(last)
    assert (report["code"], json.loads(done.stdout)["status"]) == (0, "held")
    assert json.loads(built_line) == sorted(["trace.opened", "attempt.started", "capture.stored",
                                             "frame.received", "transport.drained",
                                             "release.decided"])
    assert len(MODELS) == 26  # issue 21 added evidence.attached, reviewer.added, store.setting
    unwanted = ("tracestore.review.templates", "tracestore.review.amend", "tracestore.wire.sse",
                "tracestore.wire.eventstream", "regex", "jinja2", "jsonschema", "rich",
                "rich.console", "rich.table")
    assert [m for m in unwanted if m in report["modules"]] == []


def test_command_homes_name_every_command_where_it_is_defined() -> None:
    # `tracestore CMD` registers only COMMAND_HOMES[CMD]'s module; a command missing from
    # the map would still run (all are registered then), only slower.
    from tracestore.cli import COMMAND_HOMES, app

    homes = {info.name or info.callback.__name__.replace("_", "-"):
             info.callback.__module__.rsplit(".", 1)[-1] for info in app.registered_commands}
    homes.update({group.name: group.typer_instance.registered_commands[0].callback.__module__
                  .rsplit(".", 1)[-1] for group in app.registered_groups})
    assert homes == COMMAND_HOMES


def test_running_one_command_registers_only_its_module() -> None:
    out, code, modules = run_cli("release", "--help")
    assert code == 0 and "Usage: tracestore release" in out
    # release_cmds reads input through store_cmds; nothing else is loaded.
    assert sorted(m for m in modules if m.endswith("_cmds")) == [
        "tracestore.cli.release_cmds", "tracestore.cli.store_cmds"]


def one_attempt_store(tmp_path: Path) -> Path:
    """A store holding one ingested attempt, written in-process (only the command under test
    runs in a fresh interpreter)."""
    db = tmp_path / "s.db"
    capture = Path(__file__).resolve().parent.parent / "fixtures/real/anthropic/text-basic.sse"
    code, _, err = run("ingest", str(capture), "--attempt", "a1", "--json", db=db)
    assert code == 0, err
    return db


# Issue 25: what the three read commands of bench/startup.py load, on a store at SCHEMA_HEAD.
BUILT_PROBE = PROBE.replace("from tracestore.cli import main", """import gc
import typer.main
built = []
_build = typer.main.get_command_from_info
def _counted(command_info, **kw):
    built.append(command_info.name or command_info.callback.__name__.replace("_", "-"))
    return _build(command_info, **kw)
typer.main.get_command_from_info = _counted
import importlib.metadata
scans = []
_entry_points = importlib.metadata.entry_points
def _scanned(**kw):
    scans.append(kw)
    return _entry_points(**kw)
importlib.metadata.entry_points = _scanned
from tracestore.cli import main""").replace(
    '"modules": sorted(sys.modules)',
    '"modules": sorted(sys.modules), "built": built, "frozen": gc.get_freeze_count(), '
    '"plugin_scans": len(scans), "plugins": __import__("pydantic.plugin._loader").plugin'
    '._loader._plugins')


def run_counted(*args: str) -> tuple[str, int, dict[str, object]]:
    done = subprocess.run([sys.executable, "-c", BUILT_PROBE, json.dumps(list(args))],
                          capture_output=True, text=True, timeout=60, check=False)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return done.stdout, report["code"], report


@pytest.mark.parametrize("args", [("release", "a1", "--json"),
                                  ("events", "--attempt", "a1", "--json"),
                                  ("review", "a1", "--format", "json")])
def test_a_read_command_on_a_store_at_head_loads_no_migrations_rich_or_other_provider(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    db = one_attempt_store(tmp_path)
    out, code, report = run_counted(*args, "--db", str(db))
    modules = set(report["modules"])  # type: ignore[arg-type]
    assert code == 0 and json.loads(out.splitlines()[0])
    # The schema is checked by one plain sqlite3 statement: no Alembic, no engine's
    # inspection; nothing printed through Rich; no normalizer but the attempt's own
    # provider's (Anthropic here); no contract judge for a text attempt.
    assert sorted(m for m in modules if m.split(".")[0] in ("alembic", "rich")) == []
    providers = {m for m in modules if m.startswith("tracestore.providers.")}
    assert providers <= {"tracestore.providers.base", "tracestore.providers.observations",
                         "tracestore.providers.anthropic"}
    assert "tracestore.contracts.judge" not in modules
    # A stream's kinds only: review, agent-run, destination and live-segment models are
    # defined when a stored event or a write names them.  `review` tells the review,
    # destination and segment kinds apart by their type strings (issue 25), so reading a
    # stream attempt's record defines none of them.
    assert "tracestore.events.more_models" not in modules
    # No pydantic plugin is installed here: the scan was provably empty, so pydantic's own
    # (every distribution's metadata) never ran, and no validator is a plugin wrapper.
    assert report["plugin_scans"] == 0 and report["plugins"] == {}
    # A read loads no write path: no ingest planner (a recorded decision's id is computed
    # only to write one), no review amend planning, no signing registry.
    assert sorted(m for m in modules if m in ("tracestore.ingest.plan", "tracestore.review.amend",
                                             "tracestore.review.signing")) == []
    # Typer builds the one command that runs (not its module's other commands), and the
    # start-up heap was frozen before the command's own imports.
    assert report["built"] == [args[0]]
    assert report["frozen"] > 0


# One output, one help page and one usage error in the default run; the other help page
# and the other store read (two interpreters each) run with -m slow.
@pytest.mark.parametrize("args", [
    ["release", "a1", "--json", "--db", "{db}"],
    pytest.param(["release", "--help"], marks=pytest.mark.slow),
    ["release", "--bogus", "--json"],
    ["audit", "--help"],
    pytest.param(["destination", "--help"], marks=pytest.mark.slow),
    pytest.param(["events", "--attempt", "nope", "--db", "{db}"], marks=pytest.mark.slow),
], ids=" ".join)
def test_the_entry_point_runs_the_same_command_as_the_whole_app(tmp_path: Path,
                                                                args: list[str]) -> None:
    # main() hands Typer a copy of the app holding only the command it runs: the output,
    # the help and the usage errors are those of the whole app (every command registered).
    whole_app = PROBE.replace("from tracestore.cli import main",
                              "from tracestore.cli import app\n"
                              "def main(): app(prog_name='tracestore')")
    if "{db}" in args:
        db = str(one_attempt_store(tmp_path))
        args = [db if a == "{db}" else a for a in args]
    done = [subprocess.run([sys.executable, "-c", probe, json.dumps(args)],
                           capture_output=True, text=True, timeout=60, check=False)
            for probe in (PROBE, whole_app)]
    ours, whole = ((d.stdout, d.stderr.strip().splitlines()[:-1],
                    json.loads(d.stderr.strip().splitlines()[-1])["code"]) for d in done)
    assert ours == whole, args


def test_a_normalizer_loads_only_its_own_provider_module() -> None:
    probe = ("import sys; from tracestore.providers import make_normalizer; "
             "make_normalizer('anthropic-messages'); "
             "print(sorted(m for m in sys.modules if m.startswith('tracestore.providers.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)
    assert json.loads(done.stdout.replace("'", '"')) == [
        "tracestore.providers.anthropic", "tracestore.providers.base",
        "tracestore.providers.observations"]
    # The full registry is still there for whoever asks for it.
    from tracestore.providers import PROVIDER_NAMES, PROVIDERS
    from tracestore.providers.base import PROVIDER_MODULES

    assert sorted(PROVIDERS) == sorted(PROVIDER_NAMES) == sorted(PROVIDER_MODULES)


def test_the_event_vocabulary_is_whole_though_its_rarer_kinds_load_late() -> None:
    # events.more_models loads on first use; every name, MODELS and the union are as before.
    probe = ("import sys, tracestore.events as ev; "
             "print('tracestore.events.more_models' in sys.modules); "
             "ev.MODELS['review.approved']; "
             "print('tracestore.events.more_models' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["False", "True"]
    import typing

    import tracestore.events as ev
    from tracestore.events.models import EVENT_TYPES, MODELS

    assert all(getattr(ev, name) is not None for name in ev.__all__)
    assert list(MODELS) == list(EVENT_TYPES) and len(MODELS) == len(EVENT_TYPES)
    assert [MODELS[t].model_fields["type"].default for t in EVENT_TYPES] == list(EVENT_TYPES)
    members = typing.get_args(typing.get_args(ev.Event)[0])
    assert [MODELS[t] for t in EVENT_TYPES] == list(members)
    assert MODELS.get("no.such.type") is None and "no.such.type" not in MODELS


# Issue 25: the pydantic plugin scan is skipped only when it provably finds nothing.
PLUGIN = """
import os
class Plugin:
    def new_schema_validator(self, schema, schema_type, path, kind, config, settings):
        with open(os.environ["SEEN_FILE"], "a", encoding="utf-8") as seen:
            seen.write(path.name + "\\n")
        return None, None, None
plugin = Plugin()
"""


def test_an_installed_pydantic_plugin_still_sees_tracestores_validations(tmp_path: Path) -> None:
    from tracestore.cli import pydantic_plugin_entry_points_absent

    db = one_attempt_store(tmp_path)
    site = tmp_path / "site"
    (site / "seeplugin-1.0.dist-info").mkdir(parents=True)
    (site / "seeplugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: seeplugin\nVersion: 1.0\n")
    (site / "seeplugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[pydantic]\nsee = seeplugin:plugin\n")
    (site / "seeplugin.py").write_text(PLUGIN)
    seen = tmp_path / "seen.txt"
    env = {**__import__("os").environ, "PYTHONPATH": str(site), "SEEN_FILE": str(seen)}
    done = subprocess.run([sys.executable, "-c", PROBE,
                           json.dumps(["release", "a1", "--json", "--db", str(db)])],
                          capture_output=True, text=True, timeout=60, check=False, env=env)
    assert json.loads(done.stdout)["status"] == "held"
    # pydantic found and loaded the plugin, which saw the event models validate rows.
    assert "TraceOpened" in seen.read_text().split()
    # The check itself: a plugin's entry point anywhere on the path means "scan".
    assert pydantic_plugin_entry_points_absent() is True
    sys.path.insert(0, str(site))
    try:
        assert pydantic_plugin_entry_points_absent() is False
    finally:
        sys.path.remove(str(site))


@pytest.mark.parametrize("store", ["new", "existing"])
def test_ingest_of_a_small_capture_loads_only_what_it_writes(tmp_path, store: str) -> None:
    # Issue 25 item 2: `ingest FILE --json` of a small projection registers only its own
    # command module and loads no Rich, no Typer help formatter, no Alembic (a new SQLite
    # store is made from the migrations' replayed statements), no review templates or
    # renderers, no other wire decoder, no replay planner, no PostgreSQL driver -- and no
    # SQLAlchemy: a SQLite file's append runs on a plain sqlite3 connection (store.driver).
    db = tmp_path / "s.db"
    capture = Path(__file__).resolve().parent.parent / "fixtures/projections/t1.json"
    if store == "existing":
        assert run("init", db=db)[0] == 0  # in-process: only the ingest below is probed
    out, code, modules = run_cli("ingest", str(capture), "--db", str(db), "--json")
    assert code == 0 and json.loads(out.splitlines()[0])["kind"] == "projection"
    assert sorted(m for m in modules if m.endswith("_cmds")) == ["tracestore.cli.store_cmds"]
    unwanted = ("rich", "typer.rich_utils", "alembic", "jinja2", "jsonschema", "regex",
                "tracestore.review.templates", "tracestore.review.amend",
                "tracestore.wire.sse", "tracestore.wire.eventstream", "tracestore.ingest.replay",
                "tracestore.cli.tables", "psycopg", "psycopg2", "sqlalchemy")
    assert [m for m in unwanted if m in modules
            or any(x.startswith(m + ".") for x in modules)] == []
