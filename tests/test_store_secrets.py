"""Issue 26 item 6: a database URL's password is never printed, whichever stage fails.

Stages: the URL does not parse (a port that is no number, out of range, a broken IPv6
bracket), the server cannot be reached, authentication fails, a query fails.  The last two
need the test PostgreSQL server (``TRACESTORE_TEST_PG_URL``) and skip without it.
"""

from __future__ import annotations

import json
import uuid

import pytest

from clihelp import runner
from conftest import PG_URL
from tracestore.cli import app
from tracestore.text.masking import mask_secrets

SECRET = "S3cretPw"


def _check(url: str, code: str, *commands: list[str]) -> None:
    for command in commands or (["events"], ["init"], ["verify"]):
        for as_json in (False, True):
            args = [*command, "--db", url] + (["--json"] if as_json else [])
            result = runner.invoke(app, args, env={"COLUMNS": "400"})
            assert SECRET not in result.stderr + result.stdout, (args, result.stderr)
            assert "***" in result.stderr, result.stderr
            if as_json:
                assert json.loads(result.stderr)["error"] == code, result.stderr
            assert result.exit_code in (2, 3, 4), (args, result.exit_code, result.stderr)


@pytest.mark.parametrize("url", [
    f"postgresql+psycopg://alice:{SECRET}@db.example:port/x",
    f"postgresql+psycopg://alice:{SECRET}@127.0.0.1:99999/x",
    f"postgresql+psycopg://alice:{SECRET}@[::1/x",
])
def test_a_url_that_does_not_parse(url: str) -> None:
    _check(url, "invalid_db_url")


def test_a_server_that_is_down() -> None:
    _check(f"postgresql+psycopg://alice:{SECRET}@127.0.0.1:1/x", "database_unavailable")


@pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
def test_authentication_that_fails() -> None:
    from sqlalchemy.engine import make_url

    url = make_url(PG_URL).set(username=f"nobody_{uuid.uuid4().hex[:6]}", password=SECRET)
    _check(url.render_as_string(hide_password=False), "database_unavailable")


@pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
def test_a_query_that_fails() -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from conftest import _fresh_pg_url

    fresh = make_url(_fresh_pg_url())
    assert runner.invoke(app, ["init", "--db", fresh.render_as_string(False)]).exit_code == 0
    engine = create_engine(fresh)
    with engine.begin() as conn:  # damage the log behind the store's back
        conn.execute(text("ALTER TABLE ts_events DROP COLUMN payload CASCADE"))  # views too
    engine.dispose()
    with_password = fresh.set(password=SECRET).render_as_string(hide_password=False)
    _check(with_password, "store_damaged", ["events"])


@pytest.mark.parametrize("text, shown", [
    (f"cannot open postgresql://alice:{SECRET}@h/db: down",
     "cannot open postgresql://alice:***@h/db: down"),
    (f"sqlite+pysqlite://u:{SECRET}@/x", "sqlite+pysqlite://u:***@/x"),
    (f"host=h user=alice password={SECRET} dbname=x", "host=h user=alice password=*** dbname=x"),
    (f"password='{SECRET} x' port=1", "password=*** port=1"),
    ("postgresql://alice@h/db (no password)", "postgresql://alice@h/db (no password)"),
    ("sqlite:///tmp/a:b@c.db", "sqlite:///tmp/a:b@c.db"),
])
def test_mask_secrets(text: str, shown: str) -> None:
    assert mask_secrets(text) == shown
