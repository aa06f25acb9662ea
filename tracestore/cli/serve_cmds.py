"""``tracestore serve``: the reviewer's desk in a browser (``tracestore.serve``).

Everything that can fail is checked before the port is bound: the host (loopback unless
``--allow-remote`` with a ``--token``), the database (opened, its schema current), the
reviewer name and key.  Starlette, uvicorn and Jinja2 load inside the command only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from tracestore.cli.common import DbOption, app, database_name, handles_errors, open_store
from tracestore.errors import InputError


@app.command()
@handles_errors
def serve(
    host: Annotated[str, typer.Option(
        "--host", metavar="HOST", help="Address to listen on (loopback only, unless "
                                       "--allow-remote with --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(
        "--port", metavar="N", help="Port to listen on (0: any free port).")] = 8765,
    reviewer: Annotated[Optional[str], typer.Option(
        "--reviewer", metavar="NAME",
        help="Who reviews at this desk: amendments and approvals are recorded under this "
             "name (with --key: the key's registered name, may be left out). Without "
             "either the desk only reads; on a store with registered reviewer keys an "
             "unsigned desk only reads too (it says so).")] = None,
    key: Annotated[Optional[Path], typer.Option(
        "--key", help="Your Ed25519 reviewer key (PEM, private) to sign with. Default: "
                      "$TRACESTORE_REVIEWER_KEY, as for tracestore review.")] = None,
    template: Annotated[str, typer.Option(
        "--template", metavar="NAME", help="Review template shown and amended.")]
    = "trace-review",
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Listen on a non-loopback address (needs --token).")] = False,
    token: Annotated[Optional[str], typer.Option(
        "--token", metavar="TOKEN", envvar="TRACESTORE_DESK_TOKEN",
        help="Secret every request must carry (?token= once, then a cookie); required "
             "with --allow-remote.")] = None,
    db: DbOption = None,
) -> None:
    """Serve the reviewer's desk: the queue with its filters, trace pages, review forms.

    Binds 127.0.0.1 by default; pages load nothing from any other origin and run no
    script; every form post needs the session's CSRF token.
    """
    from tracestore.serve.security import is_loopback

    if not is_loopback(host) and not (allow_remote and token):
        raise InputError(f"--host {host} is not a loopback address: the desk shows every "
                         "trace and records reviews, so serving it to a network needs "
                         "--allow-remote and --token SECRET", code="remote_refused",
                         host=host)
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port} is not a port (0-65535)", code="invalid_port")
    from tracestore.review import check_reviewer, load_template
    from tracestore.review.signing import signing_key

    signer = signing_key(key)
    if reviewer is not None or signer is None:
        reviewer = check_reviewer(reviewer) if reviewer is not None else None
    load_template(template)
    try:
        from tracestore.serve.app import DeskConfig, desk_app
        from tracestore.serve.server import bind
        from tracestore.serve.server import serve as run
    except ModuleNotFoundError as exc:  # starlette, uvicorn or jinja2 missing
        raise InputError(f"the desk needs {exc.name}, which tracestore installs: pip "
                         "install --upgrade --force-reinstall tracestore",
                         code="missing_dependency") from exc
    from tracestore.store.engine import cannot_write, resolve_url

    read_only = cannot_write(resolve_url(db))
    if read_only and (reviewer is not None or signer is not None):
        raise InputError(f"{database_name(db)} cannot be written: the desk can show it but "
                         "not record reviews (leave out --reviewer and --key)",
                         code="store_read_only")
    with open_store(db, create=False, read_only=read_only) as store:
        store.head_position()  # an unreadable database fails here, before binding
        config = DeskConfig(db=db, reviewer=reviewer, key=signer, host=host, port=port,
                            token=token if not is_loopback(host) or token else None,
                            template=template)
        try:
            sock = bind(host, port)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}",
                             code="listen_failed", host=host, port=port) from None
        config.port = sock.getsockname()[1]
        application = desk_app(config, store)
        banner = application.desk.banner()
        standing = application.desk.standing()
        shown = f"[{host}]" if ":" in host else host
        who = (f"reviewing as {standing.reviewer}" + (", signed" if standing.signed else "")
               if standing.reviewer is not None else standing.read_only)
        sys.stderr.write(f"tracestore serve: the desk is at http://{shown}:{config.port}/ "
                         f"({application.desk.database}; {who})\n")
        if banner:
            sys.stderr.write(f"warning: {banner}\n")
        if standing.problem:
            sys.stderr.write(f"warning: {standing.problem}\n")
        sys.stderr.flush()
        run(application, sock)
