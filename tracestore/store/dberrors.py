"""Which exceptions are database errors, without importing SQLAlchemy to ask.

A store's calls raise SQLAlchemy's ``DBAPIError`` (through an engine) or ``sqlite3.Error``
(on a plain connection of a SQLite file: ``store.driver``, the quick reads).  Both are
translated alike (``reads.database_error``).  These functions are used in ``except``
clauses, which Python evaluates only when an exception is raised: SQLAlchemy's classes are
named only when SQLAlchemy is loaded -- when it is not, nothing can have raised them.
"""

from __future__ import annotations

import sqlite3
import sys


def driver_errors() -> tuple[type[Exception], ...]:
    """Every database error: ``sqlite3.Error`` and (when loaded) SQLAlchemy's DBAPIError."""
    sa = sys.modules.get("sqlalchemy.exc")
    return (sqlite3.Error,) if sa is None else (sa.DBAPIError, sqlite3.Error)


def integrity_errors() -> tuple[type[Exception], ...]:
    """Rows the database refused (a constraint): sqlite3's and SQLAlchemy's."""
    sa = sys.modules.get("sqlalchemy.exc")
    return (sqlite3.IntegrityError,) if sa is None \
        else (sa.IntegrityError, sqlite3.IntegrityError)


def driver_message(exc: BaseException) -> str:
    """The driver's own words (SQLAlchemy wraps them in ``orig``)."""
    orig = getattr(exc, "orig", None)
    return str(orig) if orig is not None else str(exc)


__all__ = ["driver_errors", "driver_message", "integrity_errors"]
