"""``tracestore proxy``: run the recording reverse proxy (``tracestore.proxy``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from tracestore.cli.common import DbOption, app, database_name, handles_errors
from tracestore.errors import InputError


@app.command()
@handles_errors
def proxy(
    upstream: Annotated[Optional[str], typer.Option(
        "--upstream", metavar="URL", help="Where every request goes (e.g. https://api.openai.com).")] = None,
    route: Annotated[Optional[list[str]], typer.Option(
        "--route", metavar="/PREFIX=URL",
        help="Send paths under /PREFIX to URL (prefix removed); repeat for several upstreams.")] = None,
    listen: Annotated[str, typer.Option(
        "--listen", metavar="HOST:PORT", help="Address to serve on.")] = "127.0.0.1:8787",
    task_file: Annotated[Optional[Path], typer.Option(
        "--task", metavar="FILE", help="Task rule (JSON) for the traces the proxy opens.")] = None,
    timeout: Annotated[float, typer.Option(
        "--upstream-timeout", metavar="SECONDS",
        help="Longest wait for the upstream's next bytes.")] = 600.0,
    grace: Annotated[float, typer.Option(
        "--grace", metavar="SECONDS",
        help="On SIGTERM or Ctrl-C: how long in-flight streams may finish before they are "
             "cut (each cut stream is recorded with a reset drain and its decision).")] = 30.0,
    secret_field: Annotated[Optional[list[str]], typer.Option(
        "--secret-field", metavar="NAME",
        help="Never store the value of request fields with this name either (repeatable; "
             "added to api_key, token, password … and $TRACESTORE_SECRET_FIELDS).")] = None,
    record_prompts: Annotated[bool, typer.Option(
        "--record-prompts",
        help="Also keep each request's prompt (messages, system text) with its settings, "
             "credentials redacted, at most 64 KiB each; off by default.")] = False,
    db: DbOption = None,
) -> None:
    """Forward requests to the upstream byte for byte and record every streamed response."""
    import json

    from tracestore.proxy.server import parse_listen, parse_routes, serve

    if not 0 <= grace <= 24 * 3600:
        raise InputError(f"--grace {grace} is not a number of seconds between 0 and 86400",
                         code="invalid_option", option="--grace")
    routes = parse_routes(upstream, route or [])
    host, port = parse_listen(listen)
    task = None
    if task_file is not None:
        from tracestore.cli.store_cmds import read_input

        try:
            task = json.loads(read_input(task_file))
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{task_file} is not JSON: {exc}", code="invalid_task") from exc
    try:
        from tracestore.proxy.app import proxy_app
    except ModuleNotFoundError as exc:  # starlette, uvicorn or httpx missing
        raise InputError(f"the proxy needs {exc.name}, which tracestore installs: pip "
                         "install --upgrade --force-reinstall tracestore",
                         code="missing_dependency") from exc
    from tracestore.proxy.writer import ProxyRecording
    from tracestore.recording.recorder import Recorder, as_task_rule

    rule = as_task_rule(task)
    with Recorder(db, secret_fields=secret_field or (),
                  record_prompts=record_prompts) as recorder:  # an unreachable database fails here, before serving
        recording = ProxyRecording(recorder, task=rule)
        application = proxy_app(routes, recording, timeout=timeout)
        shown = ", ".join(f"{p or '/'} -> {u}" for p, u in routes)

        def listening() -> None:  # once the socket accepts, not before
            sys.stderr.write(f"tracestore proxy: listening on http://{host}:{port} "
                             f"({shown}); recording into {database_name(db)}\n")
            sys.stderr.flush()
        try:
            serve(application, host, port, on_ready=listening, grace=grace)
        finally:
            recording.close()
    sys.stderr.write("tracestore proxy: stopped; every stream it forwarded is recorded\n")
