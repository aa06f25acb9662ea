"""``tracestore store``: administration of the store's tables (``partition``).  Thin over
``tracestore.store.partition``."""

from __future__ import annotations

from typing import Annotated

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, term_text,
)

store_app = typer.Typer(help="Administer the store's tables (PostgreSQL).",
                        no_args_is_help=True)
app.add_typer(store_app, name="store")


@store_app.command("partition")
@handles_errors
def partition(
    partitions: Annotated[int, typer.Option(
        "--partitions", help="How many hash partitions each table gets (2 to 1024).")] = 8,
    db: DbOption = None, as_json: JsonOption = False,
) -> None:
    """Hash-partition a PostgreSQL store: ts_events by trace_key, ts_blobs by sha256, in one
    transaction (an empty database gets the schema first)."""
    from tracestore.store.partition import partition_store

    done = partition_store(db, partitions)
    if as_json:
        emit_json({"db": done.url, "partition_count": done.partitions,
                   "tables": [{"table": table, "key": key, "row_count": rows}
                              for table, key, rows in done.tables]})
        return
    tables = ", ".join(f"{table} by hash of {key} ({rows} rows)"
                       for table, key, rows in done.tables)
    console.print(term_text(f"partitioned {done.url} into {done.partitions} partitions: "
                            f"{tables}"))
