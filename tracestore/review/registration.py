"""Who may register reviewers: a root of trust for reviewer keys.

Independence ("a second reviewer approved") means nothing if anyone who can run the CLI can
mint a second name.  So:

* the first key a store registers is its owner's: the root of trust, an admin;
* every later registration is signed by an admin key registered before it (the owner's, or
  another admin's): ``signed_by`` names that key and ``signature`` covers the whole
  registration, so a registration cannot be edited or re-attributed afterwards;
* ``verify`` walks the registrations in log order and names the first one that no admin
  signed (``check_registration``).

Stores whose reviewers were registered before registrations were signed keep verifying:
an unsigned registration is refused only once the store holds a signed one (from then on
the store is known to sign them).  What this cannot prove: that two keys an admin signed
belong to two people.  It proves only that an admin vouched for each.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Final

from tracestore.errors import ReviewError
from tracestore.events import to_json_bytes

if TYPE_CHECKING:
    from tracestore.review.signing import Registry

REGISTRATION_PREFIX: Final = b"tracestore-reviewer-registration-1\n"


def registration_message(event: Any) -> bytes:
    """The signed bytes of a registration: a prefix of its own (a review signature can
    never pass for one) and the canonical payload without ``signature``."""
    return REGISTRATION_PREFIX + to_json_bytes(event, exclude={"signature"})


def sign_registration(event: Any, admin_key: Any) -> Any:
    from tracestore.review.signing import key_id

    keyed = event.model_copy(update={"signed_by": key_id(admin_key), "signature": None})
    signature = admin_key.sign(registration_message(keyed))
    return keyed.model_copy(update={"signature": base64.b64encode(signature).decode("ascii")})


def registration_signature_ok(event: Any, public_key_pem: str) -> bool:
    from tracestore.review.signing import signature_ok

    return signature_ok(event, public_key_pem, registration_message)


def authorize(registry: Registry, admin_key: Any | None, *, admin: bool) -> Any | None:
    """The admin key that must sign a new registration, or None for the store's first.

    Refuses (``registration_signature_required``) a later registration without a key, and
    (``registration_not_authorized``) one whose key is not a registered admin's."""
    from tracestore.review.signing import key_id

    if not registry.keys:
        return None  # the owner's key: the root of trust
    if admin_key is None:
        raise ReviewError("this store has registered reviewers: a new registration must be "
                          "signed by an admin's key (--by-key ADMIN.key); the store's first "
                          "key is its owner's and an admin", code="registration_signature_required")
    kid = key_id(admin_key)
    if kid not in registry.admins:
        holder = registry.keys.get(kid)
        who = f"registered to {holder.name}, not an admin" if holder else "not registered"
        raise ReviewError(f"key {kid} is {who}: only an admin may register reviewers",
                          code="registration_not_authorized", key_id=kid)
    return admin_key


def check_registration(registry: Registry, event: Any) -> str | None:
    """Why ``event`` (a ``reviewer.added``) is not a trusted registration given the
    registry before it, or None when it is."""
    if event.signature is None:
        if registry.keys and registry.signed_registrations:
            return (f"the registration of {event.name} (key {event.key_id}) is not signed by "
                    "an admin, in a store that signs its registrations")
        return None
    signer = registry.keys.get(event.signed_by or "")
    if signer is None or event.signed_by not in registry.admins:
        return (f"the registration of {event.name} is signed by key {event.signed_by}, which "
                "was not a registered admin's before it")
    if not registration_signature_ok(event, signer.public_key):
        return f"the registration of {event.name} does not match its admin's signature"
    return None


__all__ = ["authorize", "check_registration", "registration_message",
           "registration_signature_ok", "sign_registration"]
