"""``tracestore serve``: the desk's routes through Starlette's TestClient (no browser, no
socket): the queue and its filters, trace pages, review posts (the CLI's events and
refusals), CSRF and origin refusals that append nothing, 404s, headers, bad databases and
the verify banner.  ``test_serve_browser.py`` drives the same desk in Chromium.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from clihelp import count_events, run

from tracestore.serve.app import DeskConfig, desk_app
from tracestore.store.log import EventStore

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"
HOSTILE = REPO / "fixtures" / "report" / "hostile-html.json"
BASE = "http://127.0.0.1:8765"
testclient = pytest.importorskip("starlette.testclient")


def seeded(tmp_path: Path, *scenarios: Path) -> Path:
    db = tmp_path / "desk.db"
    for scenario in scenarios:
        code, _, err = run("replay", str(scenario), "--json", db=db)
        assert code == 0, err
    return db


class Desk:
    """A desk app over ``db`` and a client holding one browser session."""

    def __init__(self, db: Path, reviewer: str | None = "alice") -> None:
        self.store = EventStore(f"sqlite:///{db}", create=False)
        self.app = desk_app(DeskConfig(db=str(db), reviewer=reviewer, port=8765), self.store)
        self.client = testclient.TestClient(self.app, base_url=BASE,
                                            raise_server_exceptions=False)

    def csrf(self, path: str) -> str:
        page = self.client.get(path)
        assert page.status_code == 200, page.text
        return re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text).group(1)

    def post(self, attempt: str, data: dict[str, str], **headers: str):
        return self.client.post(f"/review/{attempt}", data=data, follow_redirects=False,
                                headers={"origin": BASE, **headers})

    def close(self) -> None:
        self.client.close()
        self.store.close()


@pytest.fixture(scope="module")
def t8_seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = seeded(tmp_path_factory.mktemp("t8"), SEED / "t8.json", SEED / "t8-buggy-app.json")
    assert sorted(p.name for p in db.parent.iterdir()) == ["desk.db"]  # no -wal beside it
    return db


@pytest.fixture
def t8(t8_seeded: Path, tmp_path: Path) -> Iterator[tuple[Desk, Path]]:
    """A desk over this test's own copy of the t8 store seeded once per module (posts
    append to it)."""
    db = tmp_path / "desk.db"
    shutil.copy(t8_seeded, db)
    desk = Desk(db)
    yield desk, db
    desk.close()


def test_index_lists_the_queue_with_the_cli_filters(t8: tuple[Desk, Path]) -> None:
    desk, _ = t8
    page = desk.client.get("/")
    assert page.status_code == 200
    assert set(re.findall(r'<tr data-attempt="([^"]+)"', page.text)) == {
        "t8-old", "t8-new", "t8b-old", "t8b-new"}
    assert "4 attempts" in page.text
    stopped = desk.client.get("/?status=stopped")
    assert re.findall(r'<tr data-attempt="([^"]+)"', stopped.text) == ["t8-old", "t8b-old"]
    bad = desk.client.get("/?violation=answer_mismatch&violations=yes")
    assert re.findall(r'<tr data-attempt="([^"]+)"', bad.text) == ["t8b-new"]
    paged = desk.client.get("/?violations=no")
    assert re.findall(r'<tr data-attempt="([^"]+)"', paged.text) == ["t8-old", "t8-new",
                                                                       "t8b-old"]
    unknown = desk.client.get("/?status=nonsense")
    assert unknown.status_code == 400 and "unknown_filter_value" in unknown.text
    assert "Traceback" not in unknown.text
    when = desk.client.get("/?since=soon")
    assert when.status_code == 400 and "invalid_time" in when.text


def test_paging_links_walk_every_row(t8: tuple[Desk, Path]) -> None:
    from tracestore.serve import listing

    desk, _ = t8
    first = listing.query_page(desk.store, listing.parse_filter({}), limit=3)
    assert [r["attempt_id"] for r in first.rows] == ["t8-old", "t8-new", "t8b-old"]
    assert first.total == 4 and first.next_after is not None
    rest = listing.query_page(desk.store, listing.parse_filter({}), after=first.next_after,
                              limit=3)
    assert [r["attempt_id"] for r in rest.rows] == ["t8b-new"] and rest.next_after is None


def test_trace_page_and_attempt_view(t8: tuple[Desk, Path]) -> None:
    desk, _ = t8
    page = desk.client.get("/trace/t8")
    assert page.status_code == 200
    assert page.text.count('class="row ') == 24
    assert 'data-attempt="t8-old"' in page.text and "attempt 2 (retry of 1)" in page.text
    assert '<link rel="stylesheet" href="/static/report.css">' in page.text
    assert "<style>" not in page.text  # the CSP allows the desk's own stylesheet only
    one = desk.client.get("/trace/t8?attempt=t8-new")
    assert 'data-attempt="t8-new"' in one.text and 'data-attempt="t8-old"' not in one.text
    assert desk.client.get("/attempt/t8-new", follow_redirects=False).headers[
        "location"] == "/trace/t8?attempt=t8-new"
    css = desk.client.get("/static/report.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert ".lane-25 { --lc:hsl(" in css.text
    frames = desk.client.get("/events/t8-new?from=11")
    assert frames.status_code == 200 and 'id="e11"' in frames.text and 'id="e10"' not in frames.text


def test_headers_on_every_response(t8: tuple[Desk, Path]) -> None:
    desk, _ = t8
    for path in ("/", "/trace/t8", "/nope", "/static/report.css"):
        headers = desk.client.get(path).headers
        csp = headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'none'" in csp
        assert "frame-ancestors 'none'" in csp and "form-action 'self'" in csp
        assert headers["x-content-type-options"] == "nosniff"
    cookie = desk.client.get("/").headers.get("set-cookie") or ""
    session = desk.client.cookies.get("tracestore_desk")
    assert session and ("HttpOnly" in cookie or cookie == "")


def test_unknown_routes_and_ids_are_404_pages(t8: tuple[Desk, Path]) -> None:
    desk, _ = t8
    for path, code in (("/nope", "not_found"), ("/trace/nope", "trace_not_found"),
                       ("/attempt/nope", "attempt_not_found"),
                       ("/events/nope", "attempt_not_found"),
                       ("/trace/t8?attempt=t7-x", None)):
        page = desk.client.get(path)
        assert "Traceback" not in page.text and "<!DOCTYPE html>" in page.text, path
        if code is not None:
            assert page.status_code == 404 and code in page.text, path
    assert desk.client.get("/trace/t8?attempt=t7-x").status_code == 400
    assert desk.client.get("/?after=x").status_code == 400
    assert desk.client.put("/").status_code == 405


def test_wrong_host_header_is_refused(t8: tuple[Desk, Path]) -> None:
    desk, _ = t8
    assert desk.client.get("/", headers={"host": "evil.example:8765"}).status_code == 421
    assert desk.client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_post_without_csrf_or_from_another_origin_appends_nothing(
        t8: tuple[Desk, Path]) -> None:
    desk, db = t8
    csrf = desk.csrf("/trace/t8")
    before = count_events(db)
    form = {"template": "trace-review", "action": "set", "field": "remote_cancellation",
            "value": "not observed", "evidence": "6"}
    assert desk.post("t8-old", form).status_code == 403  # no token
    assert desk.post("t8-old", {**form, "csrf": "0" * 64}).status_code == 403
    evil = desk.post("t8-old", {**form, "csrf": csrf}, origin="http://evil.example")
    assert evil.status_code == 403 and "another origin" in evil.text
    other_page = desk.client.post("/review/t8-old", data={**form, "csrf": csrf},
                                  headers={"referer": "http://evil.example/x"},
                                  follow_redirects=False)
    assert other_page.status_code == 403
    # Another browser session's token is not this session's.
    stranger = Desk(db)
    try:
        assert stranger.post("t8-old", {**form, "csrf": csrf}).status_code == 403
    finally:
        stranger.close()
    assert count_events(db) == before
    done = desk.post("t8-old", {**form, "csrf": csrf})
    assert done.status_code == 303 and count_events(db) == before + 1


def review_events(db: Path, attempt: str) -> list[tuple]:
    with EventStore(f"sqlite:///{db}", create=False) as store:
        return [(e.type, e.stream, e.event.model_dump(exclude={"observed_at"}))
                for e in store.read(attempt_id=None) if e.stream.startswith("review:")
                and e.event.attempt_id == attempt]


def test_a_desk_post_appends_what_the_cli_appends(t8: tuple[Desk, Path],
                                                  tmp_path: Path) -> None:
    desk, db = t8
    csrf = desk.csrf("/trace/t8")
    done = desk.post("t8-old", {"csrf": csrf, "template": "trace-review", "action": "set",
                                "field": "remote_cancellation", "value": "not observed",
                                "evidence": "#6, 10"})
    assert done.status_code == 303
    assert done.headers["location"].startswith("/trace/t8?recorded=")
    shown = desk.client.get(done.headers["location"])
    assert "recorded 1 review event(s) at #" in shown.text
    cli_db = seeded(tmp_path / "cli" if (tmp_path / "cli").mkdir() is None else tmp_path,
                    SEED / "t8.json", SEED / "t8-buggy-app.json")
    code, _, err = run("review", "t8-old", "--set", "remote_cancellation=not observed",
                       "--evidence", "6", "--evidence", "10", "--reviewer", "alice",
                       db=cli_db)
    assert code == 0, err
    assert review_events(db, "t8-old") == review_events(cli_db, "t8-old")


def test_refusals_are_the_clis(t8: tuple[Desk, Path]) -> None:
    desk, db = t8
    csrf = desk.csrf("/trace/t8")
    before = count_events(db)
    wrong_kind = desk.post("t8-old", {"csrf": csrf, "template": "trace-review",
                                      "action": "set", "field": "nope", "value": "x"})
    assert wrong_kind.status_code in (400, 404) and "Traceback" not in wrong_kind.text
    missing = desk.post("t8-old", {"csrf": csrf, "template": "trace-review",
                                   "action": "set", "field": "remote_cancellation",
                                   "value": "x", "evidence": "999"})
    assert missing.status_code == 400 and "evidence" in missing.text
    bad_positions = desk.post("t8-old", {"csrf": csrf, "template": "trace-review",
                                         "action": "set", "field": "remote_cancellation",
                                         "value": "x", "evidence": "six"})
    assert bad_positions.status_code == 400 and "invalid_evidence" in bad_positions.text
    assert count_events(db) == before
    # Alice sets a field, then may not approve her own values: independence.
    assert desk.post("t8-old", {"csrf": csrf, "template": "trace-review", "action": "set",
                                "field": "remote_cancellation", "value": "not observed",
                                "evidence": "6"}).status_code == 303
    page = desk.client.get("/trace/t8?attempt=t8-old")
    digest = re.search(r'name="digest" value="([0-9a-f]{64})"', page.text).group(1)
    own = desk.post("t8-old", {"csrf": csrf, "template": "trace-review",
                               "action": "approve", "digest": digest})
    assert own.status_code == 409 and "Traceback" not in own.text
    # A stale digest (the record changed since the page was read) is record_changed.
    bob = Desk(db, reviewer="bob")
    try:
        bob_csrf = bob.csrf("/trace/t8")
        stale = bob.post("t8-old", {"csrf": bob_csrf, "template": "trace-review",
                                    "action": "approve", "digest": "0" * 64})
        assert stale.status_code == 409 and "record_changed" in stale.text
        ok = bob.post("t8-old", {"csrf": bob_csrf, "template": "trace-review",
                                 "action": "approve", "digest": digest})
        assert ok.status_code == 303
        record = bob.client.get("/trace/t8?attempt=t8-old").text
        assert re.search(r'<b class="state good">approved</b>', record)
        assert '<span class="approval">bob</span>' in record
    finally:
        bob.close()


def test_read_only_desk_refuses_posts(tmp_path: Path) -> None:
    db = seeded(tmp_path, SEED / "t8.json")
    desk = Desk(db, reviewer=None)
    try:
        page = desk.client.get("/trace/t8")
        assert "Read only: start the desk with" in page.text and 'method="post"' not in page.text
        before = count_events(db)
        done = desk.client.post("/review/t8-old", data={"csrf": "x"}, headers={"origin": BASE})
        assert done.status_code == 403 and count_events(db) == before
    finally:
        desk.close()


def test_hostile_text_is_escaped_on_every_page(tmp_path: Path) -> None:
    db = seeded(tmp_path, HOSTILE)
    desk = Desk(db)
    try:
        for path in ("/", "/trace/hostile-html", "/events/" + first_attempt(db)):
            text = desk.client.get(path).text
            assert "<script" not in text.lower() and "<img" not in text, path
            assert re.findall(r'(?:src|href)="(?:https?:)?//[^"]*"', text) == [], path
        assert "&lt;script&gt;" in desk.client.get("/trace/hostile-html").text
    finally:
        desk.close()


def first_attempt(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT json_extract(payload, '$.attempt_id') FROM ts_events "
                            "WHERE type = 'attempt.started' ORDER BY position").fetchone()[0]
    finally:
        conn.close()


def test_a_store_failing_verify_has_a_banner_on_every_page(tmp_path: Path) -> None:
    db = seeded(tmp_path, SEED / "t8.json")
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER ts_events_no_delete")
    conn.commit()
    conn.close()
    desk = Desk(db)
    try:
        for path in ("/", "/trace/t8", "/nope"):
            text = desk.client.get(path).text
            assert 'id="verify-banner"' in text and "tracestore verify fails" in text, path
    finally:
        desk.close()
    clean = seeded(tmp_path / "c" if (tmp_path / "c").mkdir() is None else tmp_path,
                   SEED / "t7.json")
    desk = Desk(clean)
    try:
        assert 'id="verify-banner"' not in desk.client.get("/").text
    finally:
        desk.close()


def test_serve_refuses_bad_databases_and_remote_hosts_before_binding(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    code, _, err = run("serve", "--port", "0", db=missing)
    assert code == 4 and "no_store" in err and not missing.exists()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    code, _, err = run("serve", "--port", "0", db=garbage)
    assert code == 3 and "not_our_database" in err and "garbage.db" in err
    db = seeded(tmp_path, SEED / "t7.json")
    code, _, err = run("serve", "--host", "0.0.0.0", "--port", "0", db=db)
    assert code == 2 and "remote_refused" in err
    code, _, err = run("serve", "--host", "0.0.0.0", "--allow-remote", "--port", "0", db=db)
    assert code == 2 and "remote_refused" in err


def test_a_remote_desk_needs_its_token(tmp_path: Path) -> None:
    db = seeded(tmp_path, SEED / "t7.json")
    with EventStore(f"sqlite:///{db}", create=False) as store:
        app = desk_app(DeskConfig(db=str(db), host="0.0.0.0", token="s3cret"), store)
        client = testclient.TestClient(app, base_url="http://desk.example:8765")
        assert client.get("/").status_code == 401
        assert client.get("/?token=wrong").status_code == 401
        assert client.get("/?token=s3cret").status_code == 200
        assert client.get("/").status_code == 200  # the cookie carries it now
        client.close()


def test_the_readme_serve_line_runs(tmp_path: Path) -> None:
    """The desk how-to's `tracestore serve` line (a bash block: test_readme runs console
    blocks only, and this one would not end) started for real, on a free port."""
    import shlex
    import subprocess
    import sys

    import httpx

    section = (REPO / "docs" / "how-to" / "review-in-the-desk.md").read_text("utf-8")
    line = re.search(r"```bash\n(tracestore serve[^\n#]*)", section).group(1)
    args = shlex.split(line)[1:]
    assert args == ["serve", "--reviewer", "alice"]
    db = seeded(tmp_path, SEED / "t8.json")
    proc = subprocess.Popen([sys.executable, "-m", "tracestore", *args, "--port", "0",
                             "--db", str(db)], stderr=subprocess.PIPE, text=True)
    try:
        started = proc.stderr.readline()
        url = re.search(r"the desk is at (http://127\.0\.0\.1:\d+/)", started).group(1)
        assert "reviewing as alice" in started
        page = httpx.get(url + "trace/t8", timeout=10)
        assert page.status_code == 200 and "reviewing as <b>alice</b>" in page.text
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_desk_with_a_reviewer_key_signs_as_the_cli_does(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from tracestore.cli import app
    from tracestore.review.signing import load_key

    db = seeded(tmp_path, SEED / "t8.json")
    key = tmp_path / "bob.key"
    assert CliRunner().invoke(app, ["reviewer", "keygen", str(key)]).exit_code == 0
    code, out, err = run("reviewer", "add", "bob", "--public-key", f"{key}.pub", "--json",
                         db=db)
    assert code == 0, err
    unsigned = Desk(db, reviewer="alice")
    try:  # a store with registered keys refuses unsigned reviews, as the CLI does: the
        # page shows no form, and a post made anyway is the CLI's refusal
        page = unsigned.client.get("/trace/t8")
        assert 'method="post"' not in page.text and 'id="signing-banner"' in page.text
        csrf = unsigned.app.csrf_for(unsigned.client.cookies["tracestore_desk"])
        refused = unsigned.post("t8-old", {"csrf": csrf, "template": "trace-review",
                                           "action": "approve"})
        assert refused.status_code == 409 and "signature_required" in refused.text
    finally:
        unsigned.close()
    store = EventStore(f"sqlite:///{db}", create=False)
    signer = load_key(key.read_bytes())
    signed = desk_app(DeskConfig(db=str(db), key=signer, port=8765), store)
    client = testclient.TestClient(signed, base_url=BASE)
    try:
        page = client.get("/trace/t8")
        assert "Approve this record as bob" in page.text
        csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text).group(1)
        done = client.post("/review/t8-old", data={"csrf": csrf, "template": "trace-review",
                                                   "action": "approve"},
                           headers={"origin": BASE}, follow_redirects=False)
        assert done.status_code == 303, done.text
    finally:
        client.close()
        store.close()
    code, out, _ = run("review", "t8-old", "--json", db=db)
    approval = json.loads(out)["approvals"][0]
    assert approval["reviewer"] == "bob" and approval["signed_by_key"] is not None


def test_a_read_only_archive_is_listed_without_writing(tmp_path: Path) -> None:
    """An archive (opened read-only, its queue index behind the log): the index is judged
    in memory as `tracestore attempts` does, and nothing is written."""
    db = seeded(tmp_path, SEED / "t8.json", SEED / "t7.json")
    before = db.read_bytes()
    with EventStore(f"sqlite:///{db}", read_only=True) as store:
        app = desk_app(DeskConfig(db=str(db), port=8765), store)
        client = testclient.TestClient(app, base_url=BASE)
        page = client.get("/?status=stopped")
        assert page.status_code == 200, page.text
        assert re.findall(r'<tr data-attempt="([^"]+)"', page.text) == ["t8-old", "t7"]
        assert client.get("/trace/t8").status_code == 200
        client.close()
    assert db.read_bytes() == before


def test_the_banner_follows_the_store_while_the_desk_runs(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from tracestore.serve import app as desk_module

    db = seeded(tmp_path, SEED / "t8.json")
    desk = Desk(db)
    try:
        assert 'id="verify-banner"' not in desk.client.get("/").text
        conn = sqlite3.connect(db)
        conn.execute("DROP TRIGGER ts_events_no_update")
        conn.commit()
        conn.close()
        monkeypatch.setattr(desk_module, "BANNER_EVERY_S", 0.0)
        monkeypatch.setattr(desk_module, "REVERIFY_EVERY_S", 0.0)
        desk.client.get("/")  # starts the check in a thread
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if 'id="verify-banner"' in desk.client.get("/").text:
                break
            time.sleep(0.05)
        assert "tracestore verify fails" in desk.client.get("/trace/t8").text
    finally:
        desk.close()


def test_help_does_not_load_the_desk() -> None:
    from test_startup import run_cli

    for args in (("--help",), ("serve", "--help")):
        out, code, modules = run_cli(*args)
        assert code == 0, out
        loaded = sorted(m for m in modules if m.split(".")[0] in ("starlette", "uvicorn",
                                                                  "jinja2", "sqlalchemy")
                        or m.startswith("tracestore.serve"))
        assert loaded == [], (args, loaded)


def test_a_long_attempt_links_its_frames_page_by_page(tmp_path: Path) -> None:
    from serve_scenarios import long_attempt, write

    db = seeded(tmp_path, write(tmp_path / "long.json", long_attempt(frames=320)))
    desk = Desk(db)
    try:
        page = desk.client.get("/trace/t10k").text
        assert "text delta ×316" in page and len(page) < 200_000
        link = re.search(r'href="(/events/t10k-a\?from=(\d+))"', page)
        assert link is not None
        frames = desk.client.get(link.group(1))
        shown = [int(p) for p in re.findall(r'<li id="e(\d+)"', frames.text)]
        assert shown[0] == int(link.group(2)) and len(shown) == 200
        more = re.search(r'href="(/events/t10k-a\?from=(\d+))" rel="next"', frames.text)
        assert more is not None and int(more.group(2)) == shown[-1] + 1
    finally:
        desk.close()


def test_a_database_the_desk_cannot_read_is_one_page_naming_it(tmp_path: Path) -> None:
    db = seeded(tmp_path, SEED / "t8.json")
    desk = Desk(db)
    try:
        conn = sqlite3.connect(db)
        conn.execute("DROP VIEW IF EXISTS ts_attempts")  # views depend on the table
        for (view,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'"
                                    ).fetchall():
            conn.execute(f"DROP VIEW {view}")
        conn.execute("DROP TABLE ts_events")
        conn.commit()
        conn.close()
        for path in ("/", "/trace/t8"):
            page = desk.client.get(path)
            assert page.status_code == 503, (path, page.text[:300])
            assert "the desk cannot read its database" in page.text and str(db) in page.text
            assert "store_damaged" in page.text and "Traceback" not in page.text
    finally:
        desk.close()
