"""Signed checkpoints: what closes the gap the hash chains leave open.

Each trace's chain proves each row follows from its predecessors, but whoever can write the
database can delete a trace's last rows, drop a trace, or edit a row and re-hash
everything after it; the result is again a set of valid chains.  Transparency logs close
this with a *signed tree head* kept outside the log: here a checkpoint
(``tracestore-checkpoint-2``) is (position, number of traces, Merkle root over every
trace's head as of that position, time) signed with Ed25519 (``store.tree_head``).
``verify --checkpoint`` recomputes the heads as of the signed position and proves the
store still extends them: each trace's head there carries the signed hash (its chain
commits to all its earlier rows), and no trace was dropped, truncated, rewritten or forked.
Rows appended after the checkpoint are covered by the next checkpoint.  A checkpoint also
writes its leaves beside it (``FILE.leaves``, one JSON line per trace): they are not
secret and need no protection (the signed root vouches for them), and with them
``verify --trace T --checkpoint FILE`` proves one trace's inclusion alone.

A ``tracestore-checkpoint-1`` file (position, the hash of the row there) still verifies:
the row at its position must carry its hash, which covers the global chain a store kept
before per-trace chains, and only that row's trace after it.

Keys are PEM files (PKCS#8 private, SubjectPublicKeyInfo public).  The signing key comes
from ``--key FILE`` or the ``TRACESTORE_CHECKPOINT_KEY`` environment variable (PEM text);
verifying needs only the public half.  ``cryptography`` is imported inside the functions so
that commands not using checkpoints never load it.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracestore.errors import InputError, StoreError

KEY_ENV = "TRACESTORE_CHECKPOINT_KEY"
FORMAT = "tracestore-checkpoint-1"
FORMAT_TREE = "tracestore-checkpoint-2"
#: A checkpoint made ``--extends`` an older one: its root is over the log of heads
#: (``store.head_log``), whose ``tree_size`` leaves are in ``FILE.leaves``.
FORMAT_LOG = "tracestore-checkpoint-3"
_FIELDS = ("format", "hash", "key_id", "position", "signature", "time")
_TREE_FIELDS = ("format", "key_id", "position", "root", "signature", "time", "tree_size")


@dataclass(frozen=True)
class Checkpoint:
    position: int
    hash: str
    "A -1 checkpoint's row hash (empty in a -2 checkpoint)."
    time: str
    key_id: str
    signature: str
    tree_size: int | None = None
    root: str | None = None
    "A -2 checkpoint's Merkle root over the traces' heads (a -3's over its log), hex."
    log: bool = False
    "A -3 checkpoint: ``tree_size`` and ``root`` are the log of heads' (``head_log``)."

    @property
    def format(self) -> str:
        return FORMAT if self.root is None else FORMAT_LOG if self.log else FORMAT_TREE

    def message(self) -> bytes:
        """The signed bytes: the format name and the facts, one per line."""
        if self.root is None:
            return f"{FORMAT}\n{self.position}\n{self.hash}\n{self.time}\n".encode("ascii")
        return (f"{self.format}\n{self.position}\n{self.tree_size}\n{self.root}\n"
                f"{self.time}\n").encode("ascii")

    def to_dict(self) -> dict[str, Any]:
        if self.root is None:
            return {"format": FORMAT, "position": self.position, "hash": self.hash,
                    "time": self.time, "key_id": self.key_id, "signature": self.signature}
        return {"format": self.format, "position": self.position,
                "tree_size": self.tree_size, "root": self.root, "time": self.time,
                "key_id": self.key_id, "signature": self.signature}


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


def sign(position: int, head_hash: str, time: str, key_path: Path | None, *,
         tree: tuple[int, str] | None = None, log: bool = False) -> Checkpoint:
    """Sign (position, hash, time) -- or, given ``tree`` (size, root), (position, size,
    root, time) -- with the private key from ``key_path`` or the env; ``log``: the tree
    is a log of heads extending an older checkpoint (``FORMAT_LOG``)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = _load(_key_text(key_path))
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError("signing a checkpoint needs the private key, not the .pub file",
                         code="invalid_key")
    size, root = tree if tree is not None else (None, None)
    unsigned = Checkpoint(position, "" if tree else head_hash, time,
                          _key_id(key.public_key()), "", size, root, log and tree is not None)
    signature = base64.b64encode(key.sign(unsigned.message())).decode("ascii")
    return dataclasses.replace(unsigned, signature=signature)


def read_checkpoint(path: Path) -> Checkpoint:
    raw = read_small(path, "checkpoint", "file_not_found")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path} is not a checkpoint: {exc}", code="invalid_checkpoint",
                         path=str(path)) from None
    tree = isinstance(data, dict) and data.get("format") in (FORMAT_TREE, FORMAT_LOG)
    fields, strings = ((_TREE_FIELDS, ("root", "time", "key_id", "signature")) if tree
                       else (_FIELDS, ("hash", "time", "key_id", "signature")))
    if (not isinstance(data, dict) or sorted(data) != list(fields)
            or data["format"] not in (FORMAT, FORMAT_TREE, FORMAT_LOG)
            or type(data["position"]) is not int or data["position"] < 0
            or (tree and (type(data["tree_size"]) is not int or data["tree_size"] < 0))
            or not all(isinstance(data[k], str) for k in strings)):
        raise InputError(f"{path} is not a {FORMAT_LOG}, {FORMAT_TREE} or {FORMAT} file",
                         code="invalid_checkpoint", path=str(path))
    if tree:
        return Checkpoint(data["position"], "", data["time"], data["key_id"],
                          data["signature"], data["tree_size"], data["root"],
                          data["format"] == FORMAT_LOG)
    return Checkpoint(data["position"], data["hash"], data["time"], data["key_id"],
                      data["signature"])


def leaves_path(checkpoint_path: Path) -> Path:
    """Where a checkpoint's leaves are written and looked for: beside it, ``.leaves``."""
    return checkpoint_path.with_name(checkpoint_path.name + ".leaves")


def read_leaves(path: Path) -> list[Any]:
    """The leaves of a checkpoint, as written by ``tracestore checkpoint --out``; each line
    bounded, each entry checked (``invalid_checkpoint`` naming the line)."""
    from tracestore.store.tree_head import Leaf

    out: list[Leaf] = []
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(iter(lambda: lines.readline(MAX_SMALL_FILE), ""), 1):
                try:
                    item = json.loads(line)
                    leaf = Leaf(item["trace_id"], item["version"], item["hash"])
                    leaf.data()  # checks the version and the hash's form
                except (ValueError, KeyError, TypeError, RecursionError):
                    raise InputError(f"{path} line {number} is not a checkpoint leaf",
                                     code="invalid_checkpoint", path=str(path),
                                     line=number) from None
                out.append(leaf)
    except FileNotFoundError:
        raise InputError(f"{path} is missing: `tracestore checkpoint --out FILE` writes "
                         "the leaves beside the checkpoint", code="file_not_found",
                         path=str(path)) from None
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text", code="invalid_checkpoint",
                         path=str(path)) from None
    return out


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
