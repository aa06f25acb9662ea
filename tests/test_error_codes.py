"""One registry of error codes (``tracestore.error_codes``), complete and documented.

The source is read (``tests/codescan.py``, ``ast``) for every code raised or written in a
JSON error; each must be registered, under the exit code its class gives, and
docs/errors.md must hold exactly the registry's table.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import codescan

from tracestore import error_codes
from tracestore.errors import InputError, NotFound, TracestoreError

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- error-codes:begin (python -m tracestore.error_codes) -->\n"
END = "<!-- error-codes:end -->"
USES = codescan.uses()


def test_every_code_the_source_uses_is_registered() -> None:
    missing = sorted({f"{u.code} ({u.path}:{u.line})" for u in USES
                      if u.code not in error_codes.CODES})
    assert missing == []


def test_no_source_raises_an_old_name() -> None:
    old = sorted({f"{u.code} ({u.path}:{u.line})" for u in USES
                  if u.code in error_codes.ALIASES})
    assert old == []


def test_every_code_has_the_exit_code_of_the_class_that_raises_it() -> None:
    seen: dict[str, set[int]] = defaultdict(set)
    for use in USES:
        if use.exit_code is not None:
            seen[use.code].add(use.exit_code)
    wrong = {code: sorted(exits) for code, exits in seen.items()
             if exits != {error_codes.CODES[code].exit_code}}
    assert wrong == {}


def test_no_code_comes_from_somewhere_the_scan_cannot_see() -> None:
    assert codescan.unresolved() == []


def test_every_registered_code_is_used() -> None:
    used = {u.code for u in USES}
    assert sorted(set(error_codes.CODES) - used) == []


def test_the_docs_table_is_the_registry() -> None:
    doc = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert doc[doc.index(BEGIN) + len(BEGIN):doc.index(END)] == error_codes.markdown_table()


def test_aliases_are_old_names_only() -> None:
    aliases = [a for c in error_codes.CODES.values() for a in c.aliases]
    assert len(aliases) == len(set(aliases)) and not set(aliases) & set(error_codes.CODES)
    assert error_codes.ALIASES == {"unknown_attempt": "attempt_not_found",
                                   "not_found": "attempt_not_found"}
    assert error_codes.lookup("unknown_attempt") is error_codes.ATTEMPT_NOT_FOUND
    assert error_codes.lookup("no_such_code") is None


def test_a_json_error_lists_the_old_names_for_one_release() -> None:
    merged = NotFound("no attempt 'x' in the log", code="attempt_not_found", attempt_id="x")
    assert merged.to_dict() == {"error": "attempt_not_found",
                                "message": "no attempt 'x' in the log", "attempt_id": "x",
                                "aliases": ["unknown_attempt", "not_found"]}
    assert "aliases" not in InputError("bad", code="invalid_json").to_dict()
    assert NotFound("x").code == "attempt_not_found"  # the old default not_found is an alias


def test_every_meaning_is_one_sentence() -> None:
    for entry in error_codes.CODES.values():
        assert entry.meaning.endswith(".") and not entry.meaning[0].islower(), entry.code
        assert entry.exit_code in (None, *range(1, 6)), entry.code


def test_the_scan_sees_every_way_a_code_is_given() -> None:
    found = {u.code: u for u in USES}
    assert found["usage_error"].path == "tracestore/cli/help.py"  # a JSON error dict
    assert found["chain_broken"].exit_code == 3  # a class default
    assert found["invalid_header"].exit_code == 2  # a forwarder's positional argument
    assert "invalid_json_array" in found  # a forwarder's default
    assert "number_out_of_range" in found  # an assignment to ``code``
    assert "truncated_utf8" in found and "recorded_request_mismatch" in found  # sources
    assert issubclass(InputError, TracestoreError)
