"""Seed 004's regression fixtures: one JSON line per failure seen, replayed against a contract.

A case has ``raw`` reply text or a ``patch`` merged over the contract's known-good
``example``, an optional ``stop`` (``end`` by default; ``length`` means the reply was cut by
the limit, anything else is an unusable stop), an optional ``max_bytes`` overriding the
contract's reply bound, and the ``expect``-ed code.  The stop is judged first, exactly as
the release projection only parses a reply after a normal ending.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tracestore.contracts.binding import BoundContext
from tracestore.contracts.judge import judge_reply
from tracestore.contracts.model import Contract
from tracestore.errors import InputError

#: Codes for a reply that never reached the parser because of how it stopped.
TRUNCATED = "truncated"
UNUSABLE_STOP = "unusable_stop"
MAX_CASES = 10_000


class RegressionCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=200)
    raw: str | None = None
    patch: dict[str, Any] | None = None
    stop: str = "end"
    max_bytes: int | None = Field(default=None, gt=0)
    expect: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_reply(self) -> RegressionCase:
        if (self.raw is None) == (self.patch is None):
            raise ValueError("a case has exactly one of raw and patch")
        return self


@dataclass(frozen=True, slots=True)
class CaseResult:
    line: int
    name: str
    expect: str
    got: str

    @property
    def passed(self) -> bool:
        return self.expect == self.got

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "name": self.name, "expect": self.expect, "got": self.got,
                "passed": self.passed}


def parse_cases(text: str) -> list[tuple[int, RegressionCase]]:
    """The cases of a JSONL file, by line number; a bad line is ``invalid_regression_case``."""
    from tracestore.providers.strictjson import StrictJSONError, strict_parse

    cases: list[tuple[int, RegressionCase]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append((number, RegressionCase.model_validate(strict_parse(line, max_depth=64))))
        except StrictJSONError as exc:
            raise InputError(f"line {number} is not strict JSON: {exc}",
                             code="invalid_regression_case", line=number) from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "(line)"
            raise InputError(f"line {number} is not a regression case: {where}: "
                             f"{first.get('msg')}", code="invalid_regression_case",
                             line=number) from exc
        if len(cases) > MAX_CASES:
            raise InputError(f"more than {MAX_CASES} cases", code="invalid_regression_case")
    return cases


def replay_case(contract: Contract, case: RegressionCase,
                context: BoundContext | None = None) -> str:
    """The code the contract gives this case's reply."""
    if case.stop != "end":
        return TRUNCATED if case.stop == "length" else UNUSABLE_STOP
    if case.raw is not None:
        text = case.raw
    else:
        if contract.doc.example is None:
            raise InputError(f"case {case.name!r} patches the known-good reply, but the "
                             "contract has no example", code="invalid_regression_case")
        text = json.dumps({**contract.doc.example, **(case.patch or {})}, ensure_ascii=False)
    return judge_reply(contract, text, context, max_bytes=case.max_bytes).code


def run_cases(contract: Contract, cases: list[tuple[int, RegressionCase]],
              context: BoundContext | None = None) -> list[CaseResult]:
    return [CaseResult(line, case.name, case.expect, replay_case(contract, case, context))
            for line, case in cases]
