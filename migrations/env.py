"""Alembic environment for tracestore.

tracestore runs migrations programmatically and hands over an open connection in
``config.attributes["connection"]``; running ``alembic`` by hand passes ``-x db=URL``.
"""

from alembic import context
from sqlalchemy import create_engine

from tracestore.store.schema import metadata

config = context.config


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("db", "sqlite:///tracestore.db")
    engine = create_engine(url)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("tracestore migrations run online only (they create triggers)")
run_migrations_online()
