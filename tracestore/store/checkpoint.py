"""Signed checkpoints: what closes the gap the hash chain leaves open.

The chain proves each row follows from its predecessors, but whoever can write the
database can delete the tail or edit a row and re-hash everything after it; the result is
again a valid chain.  Transparency logs close this with a *signed tree head* kept outside
the log: here a checkpoint is (position, hash at that position, time) signed with Ed25519.
``verify --checkpoint`` then proves the log still extends that head: the row at the signed
position exists and carries the signed hash, so every earlier row is the one that was
signed (the chain commits to them), and nothing before it was deleted, rewritten or
forked.  Rows appended after the checkpoint are covered by the next checkpoint.

Keys are PEM files (PKCS#8 private, SubjectPublicKeyInfo public).  The signing key comes
from ``--key FILE`` or the ``TRACESTORE_CHECKPOINT_KEY`` environment variable (PEM text);
verifying needs only the public half.  ``cryptography`` is imported inside the functions so
that commands not using checkpoints never load it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracestore.errors import InputError, StoreError

KEY_ENV = "TRACESTORE_CHECKPOINT_KEY"
FORMAT = "tracestore-checkpoint-1"
_FIELDS = ("format", "hash", "key_id", "position", "signature", "time")


@dataclass(frozen=True)
class Checkpoint:
    position: int
    hash: str
    time: str
    key_id: str
    signature: str

    def message(self) -> bytes:
        """The signed bytes: the format name and the three facts, one per line."""
        return f"{FORMAT}\n{self.position}\n{self.hash}\n{self.time}\n".encode("ascii")

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "position": self.position, "hash": self.hash,
                "time": self.time, "key_id": self.key_id, "signature": self.signature}


def generate_key() -> tuple[bytes, bytes]:
    """A fresh Ed25519 key pair as (private PEM, public PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


#: Largest key or checkpoint file read (a PEM key is ~120 bytes, a checkpoint ~300):
#: ``--key /dev/zero`` is refused here instead of growing until MemoryError.
MAX_SMALL_FILE = 64 * 1024


def read_small(path: Path, what: str, code: str) -> bytes:
    """The bytes of a small file, refused (``input_too_large``) past ``MAX_SMALL_FILE``."""
    try:
        with path.open("rb") as source:
            data = source.read(MAX_SMALL_FILE + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}", code=code,
                         path=str(path)) from None
    if len(data) > MAX_SMALL_FILE:
        raise InputError(f"{what} {path} is larger than {MAX_SMALL_FILE} bytes",
                         code="input_too_large", path=str(path), limit=MAX_SMALL_FILE)
    return data


def write_key_pair(path: Path) -> Path:
    """Write the private key to ``path`` (mode 0600) and the public key to ``path.pub``;
    return the public key's path.

    Never overwritten, never half-written: each key is written and synced to a
    fresh temp file in the same folder, then hard-linked to its name -- ``link`` fails when
    the name exists, *including as a symlink* (a ``FILE.pub`` planted as a link to another
    file is refused, never written through), and a full disk fails before any key file
    exists.  Both names appear, or neither.
    """
    private, public = generate_key()
    public_path = path.with_name(path.name + ".pub")
    for name in (path, public_path):
        if os.path.lexists(name):
            raise InputError(f"{name} already exists; a signing key is never overwritten",
                             code="key_exists", path=str(name))
    temps: list[Path] = []
    linked: list[Path] = []
    try:
        for data, mode in ((private, 0o600), (public, 0o644)):
            temps.append(_synced_temp(path.parent, data, mode))
        for temp, name in zip(temps, (path, public_path)):
            try:
                os.link(temp, name)
            except FileExistsError:
                raise InputError(f"{name} already exists; a signing key is never overwritten",
                                 code="key_exists", path=str(name)) from None
            linked.append(name)
    except BaseException:
        for name in linked:
            name.unlink(missing_ok=True)
        raise
    finally:
        for temp in temps:
            temp.unlink(missing_ok=True)
    return public_path


def _synced_temp(folder: Path, data: bytes, mode: int) -> Path:
    import secrets

    temp = (folder if str(folder) else Path(".")) / f".key-{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _key_text(path: Path | None) -> bytes:
    if path is not None:
        return read_small(path, "key", "key_unreadable")
    text = os.environ.get(KEY_ENV, "")
    if not text.strip():
        raise InputError(f"no checkpoint key: pass --key FILE or set ${KEY_ENV} "
                         "(tracestore checkpoint --generate-key FILE makes one)",
                         code="checkpoint_key_required")
    return text.encode("utf-8")


def load_ed25519_pem(pem: bytes, *, what: str = "checkpoint key") -> Any:
    """The key in ``pem``: an Ed25519 private or public key object, or ``invalid_key``
    naming ``what`` it was meant to be (checkpoints and reviewer signatures share this)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (Ed25519PrivateKey,
                                                                   Ed25519PublicKey)

    key: object  # a private or a public key of any kind; Ed25519 is checked below
    try:
        if b"PRIVATE KEY" in pem:
            key = serialization.load_pem_private_key(pem, password=None)
        else:
            key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise InputError(f"the {what} is not a PEM key: {exc}", code="invalid_key") from None
    if not isinstance(key, (Ed25519PrivateKey, Ed25519PublicKey)):
        raise InputError(f"the {what} is not an Ed25519 key", code="invalid_key")
    return key


_load = load_ed25519_pem


def _key_id(public_key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(position: int, head_hash: str, time: str, key_path: Path | None) -> Checkpoint:
    """Sign (position, hash, time) with the private key from ``key_path`` or the env."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = _load(_key_text(key_path))
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError("signing a checkpoint needs the private key, not the .pub file",
                         code="invalid_key")
    unsigned = Checkpoint(position, head_hash, time, _key_id(key.public_key()), "")
    signature = base64.b64encode(key.sign(unsigned.message())).decode("ascii")
    return Checkpoint(position, head_hash, time, unsigned.key_id, signature)


def read_checkpoint(path: Path) -> Checkpoint:
    raw = read_small(path, "checkpoint", "file_not_found")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path} is not a checkpoint: {exc}", code="invalid_checkpoint",
                         path=str(path)) from None
    if (not isinstance(data, dict) or sorted(data) != list(_FIELDS)
            or data["format"] != FORMAT or type(data["position"]) is not int
            or data["position"] < 0
            or not all(isinstance(data[k], str) for k in ("hash", "time", "key_id",
                                                          "signature"))):
        raise InputError(f"{path} is not a {FORMAT} file", code="invalid_checkpoint",
                         path=str(path))
    return Checkpoint(data["position"], data["hash"], data["time"], data["key_id"],
                      data["signature"])


def check_signature(checkpoint: Checkpoint, key_path: Path | None) -> None:
    """Raise ``StoreError(checkpoint_signature_invalid)`` unless the trusted key signed it."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = _load(_key_text(key_path))
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    try:
        public.verify(base64.b64decode(checkpoint.signature, validate=True),
                      checkpoint.message())
    except (InvalidSignature, ValueError):
        raise StoreError(f"the checkpoint at position {checkpoint.position} was not signed by "
                         f"key {_key_id(public)} (or was edited after signing)",
                         code="checkpoint_signature_invalid") from None
