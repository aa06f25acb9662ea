"""What a recording call is given, checked before anything is written: task rules,
contracts and request bindings, request settings, profile names, the database to open."""

from __future__ import annotations

import json
from typing import Any, Mapping

from tracestore.errors import InputError, StoreError
from tracestore.events import TaskRule
from tracestore.ingest import Bindings
from tracestore.projections.semantics import validate_rule


def as_task_rule(task: TaskRule | Mapping[str, Any] | None) -> TaskRule | None:
    """A task rule from a ``TaskRule`` or a plain dict; bad or unsafe rules are refused."""
    if task is None:
        return None
    try:
        rule = task if isinstance(task, TaskRule) else TaskRule.model_validate(task)
    except ValueError as exc:
        raise InputError(f"not a task rule: {str(exc).splitlines()[0]}",
                         code="invalid_task") from exc
    validate_rule(rule)
    return rule


def _bindings(contract: Any, binding: Mapping[str, Any] | None) -> Bindings | None:
    """Check a contract and a request binding before anything is recorded."""
    from tracestore.contracts.binding import context_of
    from tracestore.contracts.model import Contract, load_contract

    if contract is None and binding is None:
        return None
    loaded = contract if isinstance(contract, Contract) or contract is None \
        else load_contract(contract)
    plain = _request_settings(binding)
    if plain is not None:
        context_of(plain)
    return Bindings(loaded, plain)


def _check_profile(profile: str | None) -> None:
    """A trace names a shipped profile or none: an unknown name would hold every answer
    ``no_profile`` silently."""
    from tracestore.projections.profiles import PROFILES

    if profile is not None and profile not in PROFILES:
        raise InputError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}",
                         code="unknown_profile")


def _request_settings(request: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if request is None:
        return None
    try:
        return json.loads(json.dumps(dict(request)))  # JSON only: it is stored forever
    except (TypeError, ValueError) as exc:
        raise InputError(f"request settings must be JSON values: {exc}",
                         code="invalid_request") from exc


def _recorded_request(request: Mapping[str, Any] | None, fields: frozenset[str],
                      ) -> dict[str, Any] | None:
    """An attempt's request settings as they are stored: JSON values, every credential
    replaced (``tracestore.text.redaction``)."""
    from tracestore.text.redaction import redact

    plain = _request_settings(request)
    return None if plain is None else redact(plain, fields)


def _open_store(cls: Any, db: str | None) -> Any:
    try:
        return cls(db)
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - the driver's own errors, at one boundary
        from sqlalchemy.exc import SQLAlchemyError

        if isinstance(exc, SQLAlchemyError):
            raise StoreError(f"cannot open the event store: {getattr(exc, 'orig', exc)}",
                             code="database_unavailable") from exc
        raise


__all__ = ["as_task_rule"]
