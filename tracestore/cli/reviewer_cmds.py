"""``tracestore reviewer``: reviewer keys (keygen, add, list) and the unsigned-reviews
setting.  Registering a key and changing the setting are appended events."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from tracestore.cli.common import (
    DbOption, JsonOption, app, console, emit_json, handles_errors, open_store, term_text,
)

if TYPE_CHECKING:
    from tracestore.store.log import EventStore

reviewer_app = typer.Typer(help="Reviewer keys: who signs amendments and approvals.",
                           no_args_is_help=True)
app.add_typer(reviewer_app, name="reviewer")


def _registry(store: EventStore) -> Any:
    from tracestore.review.signing import REVIEWERS_STREAM, SETTINGS_STREAM, registry_of

    return registry_of([*store.read(stream=REVIEWERS_STREAM),
                        *store.read(stream=SETTINGS_STREAM)])


@reviewer_app.command("keygen")
@handles_errors
def keygen(path: Annotated[Path, typer.Argument(help="Private key file to create (0600); "
                                                     "the public half goes to PATH.pub.")],
           as_json: JsonOption = False) -> None:
    """Create an Ed25519 reviewer key pair (never overwrites a file)."""
    from tracestore.review.signing import key_id, load_key, write_key_pair
    from tracestore.store.checkpoint import read_small

    public = write_key_pair(path)
    kid = key_id(load_key(read_small(public, "public key", "key_unreadable")))
    if as_json:
        emit_json({"private_key": str(path), "public_key": str(public), "key_id": kid})
        return
    console.print(term_text(f"wrote {path} (private, keep it secret) and {public} "
                            f"(key {kid}); register it: tracestore reviewer add NAME "
                            f"--public-key {public}"))


@reviewer_app.command("add")
@handles_errors
def add(name: Annotated[str, typer.Argument(help="The reviewer's name, as records show it.")],
        public_key: Annotated[Path, typer.Option("--public-key", help="The reviewer's public "
                                                                      "key (PEM).")],
        by_key: Annotated[Optional[Path], typer.Option(
            "--by-key", metavar="FILE", help="An admin's private key, which signs this "
            "registration (required once the store has a reviewer: the first one registered "
            "is the store's owner).")] = None,
        admin: Annotated[bool, typer.Option(
            "--admin", help="This reviewer may register others too.")] = False,
        db: DbOption = None, as_json: JsonOption = False) -> None:
    """Register a reviewer's public key (appends reviewer.added, signed by an admin)."""
    from tracestore.review.amend import check_reviewer
    from tracestore.review.signing import plan_reviewer, signing_key
    from tracestore.store.checkpoint import read_small

    name = check_reviewer(name)
    pem = read_small(public_key, "public key", "key_unreadable")
    signer = signing_key(by_key) if by_key is not None else None
    with open_store(db, create=False) as store:
        result = store.append_with(lambda view: ([plan_reviewer(
            registry_in_view(view), name, pem, admin=admin, admin_key=signer)], []))
        registered = store.read(after=result.positions[0] - 1, limit=1)[0].event
        by = _registrar(_registry(store), registered)
    if as_json:
        emit_json({"name": name, "key_id": registered.key_id, "admin": registered.admin,
                   "signed_by": registered.signed_by, "position": result.positions[0]})
        return
    console.print(term_text(f"registered {name} (key {registered.key_id}"
                            f"{', admin' if registered.admin else ''}; {by}) at "
                            f"#{result.positions[0]}"))


def _registrar(registry: Any, event: Any) -> str:
    """Who vouched for a registration, in words."""
    if event.signed_by is None:
        if next(iter(registry.keys), None) == event.key_id:
            return "the store's first key: its owner"
        return "unsigned: registered before this store signed registrations"
    holder = registry.keys.get(event.signed_by)
    return f"registered by {holder.name if holder else '?'} (key {event.signed_by})"


def registry_in_view(view: Any) -> Any:
    from tracestore.cli.review_cmds import registry_in

    return registry_in(view)


@reviewer_app.command("list")
@handles_errors
def list_(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Registered reviewer keys and whether unsigned reviews are accepted."""
    with open_store(db, create=False) as store:
        registry = _registry(store)
    rows = [{"name": e.name, "key_id": kid, "admin": kid in registry.admins,
             "signed_by": e.signed_by} for kid, e in registry.keys.items()]
    if as_json:
        emit_json({"reviewers": rows, "unsigned_reviews":
                   "allowed" if registry.unsigned_allowed else "refused"})
        return
    for kid, event in registry.keys.items():
        role = "admin, " if kid in registry.admins else ""
        console.print(term_text(f"{event.name}  key {kid}  ({role}"
                                f"{_registrar(registry, event)})"))
    console.print(term_text("unsigned reviews: " + (
        "accepted (shown as unsigned)" if registry.unsigned_allowed else "refused")))


@reviewer_app.command("unsigned")
@handles_errors
def unsigned(value: Annotated[str, typer.Argument(help="allow or refuse")],
             by: Annotated[Optional[str], typer.Option(help="Who changed the setting.")] = None,
             reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
             db: DbOption = None, as_json: JsonOption = False) -> None:
    """Opt in to (or out of) unsigned reviews in a store with registered keys (appends a
    store.setting event; unsigned reviews are shown as unsigned everywhere)."""
    from tracestore.errors import InputError
    from tracestore.review.signing import plan_setting

    words = {"allow": "allowed", "refuse": "refused"}
    if value not in words:
        raise InputError("tracestore reviewer unsigned takes allow or refuse",
                         code="invalid_setting", value=value)
    with open_store(db, create=False) as store:
        result = store.append([plan_setting(words[value], by, reason)])
    if as_json:
        emit_json({"unsigned_reviews": words[value], "position": result.positions[0]})
        return
    console.print(term_text(f"unsigned reviews {words[value]} (#{result.positions[0]})"))
