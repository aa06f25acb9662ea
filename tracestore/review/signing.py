"""Reviewers by key: Ed25519 signatures on review events, the registry of reviewer keys and
the store's setting for unsigned reviews.

* ``tracestore reviewer add NAME --public-key FILE`` appends ``reviewer.added`` (stream
  ``reviewers``); one key belongs to one name.
* A review event (``review.field_set``, ``review.approved``, a person's
  ``semantic.judged``) is signed over ``MESSAGE_PREFIX`` + its canonical payload without
  the ``signature`` field (``key_id`` included), so a signature over other content fails.
* Policy (compatible with stores that never registered a key): a store with NO registered
  reviewer key accepts unsigned reviews and shows them as unsigned.  Once any key is
  registered, unsigned reviews are refused (``signature_required``) unless the store
  setting ``unsigned_reviews=allowed`` (an appended ``store.setting``) opts in.
* ``verify`` re-checks every review signature against the key registered before it.

``cryptography`` is imported inside the functions, so commands not signing never load it.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tracestore.errors import InputError, ReviewError
from tracestore.events import NewEvent, StoredEvent, to_json_bytes

if TYPE_CHECKING:  # events.more_models, defined when a registration is first read or made
    from tracestore.events import ReviewerAdded

KEY_ENV: Final = "TRACESTORE_REVIEWER_KEY"
MESSAGE_PREFIX: Final = b"tracestore-review-signature-1\n"
REVIEWERS_STREAM: Final = "reviewers"
SETTINGS_STREAM: Final = "settings"
UNSIGNED_SETTING: Final = "unsigned_reviews"
UNSIGNED_VALUES: Final = ("allowed", "refused")
#: Event types that carry a reviewer's signature.
SIGNED_TYPES: Final = ("review.field_set", "review.approved", "semantic.judged")


def _crypto() -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return serialization, ed25519


def load_key(pem: bytes, *, what: str = "reviewer key") -> Any:
    """An Ed25519 private or public key from PEM bytes (``invalid_key`` otherwise)."""
    from tracestore.store.checkpoint import load_ed25519_pem

    return load_ed25519_pem(pem, what=what)


def public_of(key: Any) -> Any:
    _, ed25519 = _crypto()
    return key.public_key() if isinstance(key, ed25519.Ed25519PrivateKey) else key


def key_id(key: Any) -> str:
    serialization, _ = _crypto()
    raw = public_of(key).public_bytes(serialization.Encoding.Raw,
                                      serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_pem(key: Any) -> str:
    serialization, _ = _crypto()
    return public_of(key).public_bytes(
        serialization.Encoding.PEM,
        serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def write_key_pair(path: Path) -> Path:
    """A new Ed25519 pair: ``path`` (private, 0600, never overwritten) and ``path.pub``."""
    serialization, ed25519 = _crypto()
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InputError(f"{path} already exists; a signing key is never overwritten",
                         code="key_exists", path=str(path)) from None
    with os.fdopen(fd, "wb") as out:
        out.write(private)
    public_path = path.with_name(path.name + ".pub")
    public_path.write_text(public_pem(key), encoding="ascii")
    return public_path


def signing_key(path: Path | None) -> Any | None:
    """The private key from ``--key FILE``, else ``$TRACESTORE_REVIEWER_KEY`` (PEM text or
    a file path), else None (an unsigned review)."""
    from tracestore.store.checkpoint import read_small

    if path is None:
        text = os.environ.get(KEY_ENV, "").strip()
        if not text:
            return None
        pem = text.encode("utf-8") if "-----BEGIN" in text else \
            read_small(Path(text), "key", "key_unreadable")
    else:
        pem = read_small(path, "key", "key_unreadable")
    key = load_key(pem)
    _, ed25519 = _crypto()
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise InputError("signing a review needs the private key, not the .pub file",
                         code="invalid_key")
    return key


def message(event: Any) -> bytes:
    """The signed bytes: a fixed prefix and the canonical payload without ``signature``."""
    return MESSAGE_PREFIX + to_json_bytes(event, exclude={"signature"})


def sign(event: Any, key: Any) -> Any:
    """``event`` with ``key_id`` and ``signature`` set."""
    keyed = event.model_copy(update={"key_id": key_id(key), "signature": None})
    signature = base64.b64encode(key.sign(message(keyed))).decode("ascii")
    return keyed.model_copy(update={"signature": signature})


def signature_ok(event: Any, public_key_pem: str,
                 signed: Callable[[Any], bytes] | None = None) -> bool:
    """Whether ``event.signature`` is the key's over ``signed(event)`` (default: the review
    message; a registration passes its own, ``registration.registration_message``)."""
    from cryptography.exceptions import InvalidSignature

    if not event.signature:
        return False
    try:
        load_key(public_key_pem.encode("ascii")).verify(
            base64.b64decode(event.signature, validate=True), (signed or message)(event))
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass
class Registry:
    """Reviewer keys and the unsigned-reviews setting, as of some position."""

    keys: dict[str, ReviewerAdded] = field(default_factory=dict)
    "key id → its registration."
    unsigned: str | None = None
    "The latest ``unsigned_reviews`` setting (None: never set)."
    admins: set[str] = field(default_factory=set)
    "Key ids that may register reviewers: the store's first key and those marked admin."
    signed_registrations: bool = False
    "Whether any registration so far was signed by an admin (then every later one must be)."

    def add(self, stored: StoredEvent) -> None:
        event = stored.event
        kind = getattr(event, "type", None)  # by type string: see the import above
        if kind == "reviewer.added":
            if not self.keys or getattr(event, "admin", False):
                self.admins.add(event.key_id)
            if getattr(event, "signature", None):
                self.signed_registrations = True
            self.keys[event.key_id] = event
        elif kind == "store.setting" and event.name == UNSIGNED_SETTING:
            self.unsigned = event.value

    @property
    def unsigned_allowed(self) -> bool:
        return not self.keys or self.unsigned == "allowed"

    def names(self) -> dict[str, list[str]]:
        from tracestore.review.context import reviewer_key

        found: dict[str, list[str]] = {}
        for kid, event in self.keys.items():
            found.setdefault(reviewer_key(event.name), []).append(kid)
        return found


def registry_of(events: Iterable[StoredEvent]) -> Registry:
    registry = Registry()
    for stored in sorted(events, key=lambda e: e.position):
        registry.add(stored)
    return registry


def signer_name(registry: Registry, key: Any, reviewer: str | None) -> str:
    """The reviewer name a key signs as: its registered name (``--reviewer`` must match)."""
    from tracestore.review.context import reviewer_key

    kid = key_id(key)
    registered = registry.keys.get(kid)
    if registered is None:
        raise ReviewError(f"key {kid} is not a registered reviewer key: register it with "
                          "tracestore reviewer add NAME --public-key FILE.pub",
                          code="reviewer_key_unknown", key_id=kid)
    if reviewer is not None and reviewer_key(reviewer) != reviewer_key(registered.name):
        raise ReviewError(f"key {kid} is registered to {registered.name}, not {reviewer}",
                          code="reviewer_key_mismatch", key_id=kid, reviewer=reviewer)
    return registered.name


def require_unsigned_allowed(registry: Registry) -> None:
    if not registry.unsigned_allowed:
        raise ReviewError("this store has registered reviewer keys: sign the review with "
                          f"--key FILE (or ${KEY_ENV}); unsigned reviews need the store "
                          "setting `tracestore reviewer unsigned allow`",
                          code="signature_required")


def plan_reviewer(registry: Registry, name: str, pem: bytes, *, admin: bool = False,
                  admin_key: Any | None = None) -> NewEvent:
    """A registration: the store's first key unsigned (its owner, an admin), every later
    one signed by ``admin_key`` (``review.registration``)."""
    from tracestore.events import ReviewerAdded
    from tracestore.review.registration import authorize, sign_registration

    key = public_of(load_key(pem, what="public key"))
    kid = key_id(key)
    if kid in registry.keys:
        raise ReviewError(f"key {kid} is already registered to {registry.keys[kid].name}",
                          code="key_already_registered", key_id=kid)
    signer = authorize(registry, admin_key, admin=admin)
    event = ReviewerAdded(name=name, key_id=kid, public_key=public_pem(key),
                          admin=admin or not registry.keys)
    if signer is not None:
        event = sign_registration(event, signer)
    return NewEvent(REVIEWERS_STREAM, event)


def plan_setting(value: str, by: str | None, reason: str | None) -> NewEvent:
    from tracestore.events import StoreSetting

    if value not in UNSIGNED_VALUES:
        raise InputError(f"unsigned_reviews is one of {', '.join(UNSIGNED_VALUES)}",
                         code="invalid_setting", value=value)
    return NewEvent(SETTINGS_STREAM, StoreSetting(name=UNSIGNED_SETTING, value=value, by=by,
                                                  reason=reason))


@dataclass(frozen=True)
class SignatureCheck:
    ok: bool
    checked: int
    position: int | None = None
    reason: str | None = None
    kind: str = "review"
    "What failed at ``position``: a ``review`` signature or a reviewer ``registration``."


def check_signatures(events: Sequence[StoredEvent]) -> SignatureCheck:
    """Every review signature against the key registered before it (``verify``).

    ``events`` are the registry and review events in position order.  The first bad one
    (a signature over other content, a key not registered then, a name the key is not
    registered to, or an unsigned review where the store required signatures) is named,
    and so is the first registration no admin signed (``review.registration``)."""
    from tracestore.review.context import reviewer_key
    from tracestore.review.registration import check_registration

    registry, checked = Registry(), 0
    for stored in events:
        event = stored.event
        if stored.type == "reviewer.added":
            problem = check_registration(registry, event)
            if problem is not None:
                return SignatureCheck(False, checked, stored.position, problem, "registration")
        if stored.type not in SIGNED_TYPES:
            registry.add(stored)
            continue
        if stored.type == "semantic.judged" and event.by == "rule":
            continue
        checked += 1
        who = getattr(event, "reviewer", None) or getattr(event, "by", None) or ""
        if event.key_id is None:
            if not registry.unsigned_allowed:
                return SignatureCheck(False, checked, stored.position,
                                      "an unsigned review where the store requires signatures")
            continue
        registered = registry.keys.get(event.key_id)
        if registered is None:
            return SignatureCheck(False, checked, stored.position,
                                  f"signed by key {event.key_id}, not registered before it")
        if reviewer_key(registered.name) != reviewer_key(who):
            return SignatureCheck(False, checked, stored.position,
                                  f"key {event.key_id} is registered to {registered.name}, "
                                  f"not {who}")
        if not signature_ok(event, registered.public_key):
            return SignatureCheck(False, checked, stored.position,
                                  "the signature does not match the event's content")
    return SignatureCheck(True, checked)
