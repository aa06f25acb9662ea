"""Which recorded exchange answers a request, and the provider's own words when none does.

Pure: request facts in, a choice or an error body out.  A request body is compared as
canonical JSON (keys sorted), so the order a client happens to write keys in never matters
and every value does: a changed question, prompt, schema or parameter is a mismatch,
reported with the first field that differs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracestore.mock.scenario import Exchange


@dataclass(frozen=True)
class Choice:
    index: int | None
    "The exchange that answers, or None (then ``error`` says why)."
    error: dict[str, str] | None = None
    "``{'code': …, 'message': …}`` when no exchange answers."
    status: int = 200

    @property
    def code(self) -> str:
        return self.error["code"] if self.error else ""

    @property
    def message(self) -> str:
        return self.error["message"] if self.error else ""


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def first_difference(want: Any, got: Any, at: str = "") -> str | None:
    """The path of the first field where ``got`` differs from ``want`` (None: equal)."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            where = f"{at}.{key}" if at else key
            if key not in got:
                return f"{where} (missing)"
            if key not in want:
                return f"{where} (not in the recording)"
            found = first_difference(want[key], got[key], where)
            if found:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        for n, (a, b) in enumerate(zip(want, got)):
            found = first_difference(a, b, f"{at}[{n}]")
            if found:
                return found
        if len(want) != len(got):
            return f"{at} ({len(got)} items, the recording has {len(want)})"
        return None
    return None if canonical(want) == canonical(got) else (at or "(the body)")


def choose(exchanges: Sequence[Exchange], used: set[int], path: str, body: Any) -> Choice:
    """The first unused exchange for ``path`` whose request matches ``body``."""
    on_path = [n for n, e in enumerate(exchanges) if path.endswith(e.path)]
    if not on_path:
        return Choice(None, {"code": "replay_no_exchange",
                             "message": f"no recorded exchange answers {path}"}, 404)
    left = [n for n in on_path if n not in used]
    if not left:
        return Choice(None, {"code": "replay_exhausted", "message": "every recorded "
                             f"exchange for {path} has been played ({len(on_path)})"}, 409)
    for n in left:
        want = exchanges[n].request
        if want is None:
            return Choice(n)
        ignored = set(exchanges[n].ignore_fields)
        if not isinstance(body, dict):
            continue
        mine = {k: v for k, v in want.items() if k not in ignored}
        theirs = {k: v for k, v in body.items() if k not in ignored}
        if canonical(mine) == canonical(theirs):
            return Choice(n)
    want = exchanges[left[0]].request or {}
    ignored = set(exchanges[left[0]].ignore_fields)
    where = first_difference({k: v for k, v in want.items() if k not in ignored},
                             {k: v for k, v in body.items() if k not in ignored}
                             if isinstance(body, dict) else body)
    return Choice(None, {"code": "replay_request_mismatch",
                         "message": f"the request differs from the recorded one at {where}"},
                  400)


def error_body(path: str, code: str, message: str, status: int) -> dict[str, Any]:
    """The error the provider ``path`` names would send, carrying ``code``."""
    if path.endswith("/messages"):  # Anthropic
        return {"type": "error", "error": {"type": code, "message": message}}
    if ":streamGenerateContent" in path or ":generateContent" in path:  # Gemini
        return {"error": {"code": status, "message": f"{code}: {message}",
                          "status": "FAILED_PRECONDITION"}}
    if path.startswith("/api/"):  # Ollama
        return {"error": f"{code}: {message}"}
    return {"error": {"message": message, "type": "invalid_request_error", "code": code,
                      "param": None}}  # OpenAI (and what follows its shape)


__all__ = ["Choice", "canonical", "choose", "error_body", "first_difference"]
