"""How a database is named to a person: the path of a SQLite file, or a URL with its
password hidden. Shared by the CLI's error messages and the desk's header."""

from __future__ import annotations

from tracestore.errors import TracestoreError


def database_name(db: str | None) -> str:
    """The database a command used, as a person recognises it (never with a password)."""
    from tracestore.store.engine import make_url, resolve_url

    try:
        url = make_url(resolve_url(db))
    except TracestoreError:
        return str(db)
    if url.get_backend_name() == "sqlite":
        return url.database or "an in-memory SQLite database"
    return url.render_as_string(hide_password=True)
