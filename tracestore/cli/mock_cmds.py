"""``tracestore mock``: serve a local provider that plays real streams with scripted faults."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from tracestore.cli.common import app, handles_errors
from tracestore.errors import InputError


@app.command()
@handles_errors
def mock(
    scenario: Annotated[Optional[Path], typer.Argument(
        help="Scenario file: the exchanges to play (see --schema); or a folder of captures, each played once on its API's path.")] = None,
    listen: Annotated[str, typer.Option(
        "--listen", metavar="HOST:PORT", help="Address to serve on.")] = "127.0.0.1:8788",
    schema: Annotated[bool, typer.Option(
        "--schema", help="Print the scenario file's JSON Schema and exit.")] = False,
    from_store: Annotated[Optional[str], typer.Option(
        "--from-store", metavar="DB", help="Also play the live attempts recorded in this "
        "store (database URL or SQLite file) that have a request and raw bytes.")] = None,
    trace: Annotated[Optional[str], typer.Option(
        "--trace", help="With --from-store: only this trace's attempts.")] = None,
) -> None:
    """Serve a local provider that plays captured streams with scripted faults.

    Point an SDK's base URL at it (OPENAI_BASE_URL=http://127.0.0.1:8788/v1 …).  A recorded
    request body is matched exactly; GET /.tracestore/mock/log lists every request with the
    bytes sent and the byte at which the client left.
    """
    if schema:
        from tracestore.mock.scenario import schema as scenario_schema

        sys.stdout.write(json.dumps(scenario_schema(), indent=2) + "\n")
        return
    if scenario is None and from_store is None:
        raise InputError("tracestore mock needs a scenario file or --from-store (or --schema)",
                         code="missing_option")
    if trace is not None and from_store is None:
        raise InputError("--trace needs --from-store", code="missing_option")
    from tracestore.mock import mock_app
    from tracestore.proxy.server import parse_listen, serve

    application = mock_app(scenario, from_store=from_store, trace=trace)
    host, port = parse_listen(listen)

    def listening() -> None:
        sys.stderr.write(f"tracestore mock: listening on http://{host}:{port} "
                         f"({len(application.scenario.exchanges)} exchanges)\n")
        sys.stderr.flush()

    serve(application, host, port, on_ready=listening, grace=5.0)
