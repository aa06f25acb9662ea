"""RFC 6962 / RFC 9162 Merkle tree hashing (SHA-256): roots, inclusion and consistency proofs.

Why, next to the hash chain: the chain proves a log unedited only to whoever re-reads all
of it.  A tree head over the traces' chain heads lets a verifier check one trace (an
inclusion proof, ~log2(n) hashes) or that today's log extends yesterday's (a consistency
proof) without the rest.  The hashing is Certificate Transparency's byte for byte, so any
CT library can check these proofs.  Pure: ``hashlib`` only, no I/O.

Producers (``root``, ``inclusion_proof``, ``consistency_proof``) raise ``ValueError`` on a
request that makes no sense; verifiers (``verify_*``) take untrusted input and answer
``False`` for anything malformed, never raise.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import NoReturn

HASH_SIZE = 32
"Bytes in every hash here (SHA-256)."

EMPTY_ROOT = hashlib.sha256(b"").digest()
"MTH({}): the root of the empty tree (RFC 6962 §2.1)."

TRACE_LEAF_PREFIX = b"tracestore-trace-head-1\x00"
"Names (and versions) the ``trace_leaf`` encoding, so its bytes cannot mean anything else."

_HEX64 = re.compile(r"[0-9a-f]{64}")
_sha256 = hashlib.sha256


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || data): the 0x00 prefix keeps a leaf distinct from any inner node."""
    return _sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right): an inner node over its two children."""
    return _sha256(b"\x01" + left + right).digest()


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH(D[n]) over leaf *data* (RFC 6962 §2.1): each leaf goes through ``leaf_hash``."""
    return root_of_hashes(leaf_hash(data) for data in leaves)


def root_of_hashes(leaf_hashes: Iterable[bytes]) -> bytes:
    """MTH over already-computed leaf hashes, in O(n) time and O(log n) extra memory.

    A stack, not the RFC's recursion over slices (which copies the list at every level):
    it holds the roots of the complete subtrees so far, one per set bit of the count; a
    new leaf merges with each equal-sized one on top, and the final right-to-left fold is
    the RFC's split at the largest power of two below n.  A generator is never listed.
    """
    sha = _sha256  # a local: this loop runs twice per leaf
    stack: list[bytes] = []
    for count, h in enumerate(leaf_hashes, 1):
        if len(h) != HASH_SIZE:
            _wrong_size(count - 1, h)
        merges = count
        while not merges & 1:  # one merge per trailing zero bit of the new count
            h = sha(b"\x01" + stack.pop() + h).digest()
            merges >>= 1
        stack.append(h)
    if not stack:
        return EMPTY_ROOT
    h = stack.pop()
    while stack:
        h = sha(b"\x01" + stack.pop() + h).digest()
    return h


def _wrong_size(index: int, value: bytes) -> NoReturn:  # the one wording for both callers
    raise ValueError(f"Leaf hash {index} is {len(value)} bytes long, not {HASH_SIZE}.")


def _check_leaf_hashes(leaf_hashes: Sequence[bytes]) -> int:
    """The leaf count, once every leaf hash is 32 bytes: a proof over a malformed "hash"
    proves nothing, so one is refused up front, even where it would not enter the proof."""
    for index, value in enumerate(leaf_hashes):
        if len(value) != HASH_SIZE:
            _wrong_size(index, value)
    return len(leaf_hashes)


def _split(size: int) -> int:
    """k, the largest power of two strictly below ``size`` (>= 2): where RFC 6962 splits."""
    return 1 << ((size - 1).bit_length() - 1)


def _subtree(leaf_hashes: Sequence[bytes], lo: int, hi: int) -> bytes:
    """MTH(D[lo:hi]) without copying the slice."""
    return root_of_hashes(leaf_hashes[i] for i in range(lo, hi))


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int) -> list[bytes]:
    """PATH(index, D[n]) of RFC 6962 §2.1.1: the siblings from the leaf up to the root.

    The RFC's recursion walked top-down with bounds, not slices: the sibling subtrees are
    disjoint, so a proof costs O(n) hashing and no copies."""
    size = _check_leaf_hashes(leaf_hashes)
    if not 0 <= index < size:
        raise ValueError(f"Leaf index {index} is outside a tree of {size} leaves.")
    path: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        mid = lo + _split(hi - lo)
        if index < mid:
            path.append(_subtree(leaf_hashes, mid, hi))
            hi = mid
        else:
            path.append(_subtree(leaf_hashes, lo, mid))
            lo = mid
    path.reverse()  # found root-down; the RFC lists them leaf-up
    return path


def consistency_proof(leaf_hashes: Sequence[bytes], old_size: int) -> list[bytes]:
    """PROOF(old_size, D[n]) of RFC 6962 §2.1.2: the tree extends its first ``old_size``
    leaves (empty proof for equal sizes).  SUBPROOF walked top-down with bounds; ``complete``
    is the RFC's ``b``: the old tree is still one subtree whose root the verifier holds."""
    size = _check_leaf_hashes(leaf_hashes)
    if old_size < 1:
        raise ValueError("A consistency proof from the empty tree proves nothing: "
                         f"old_size must be at least 1, not {old_size}.")
    if old_size > size:
        raise ValueError(f"old_size {old_size} is larger than the tree's {size} leaves.")
    outer: list[bytes] = []
    lo, hi, m, complete = 0, size, old_size, True
    while m != hi - lo:
        mid = lo + _split(hi - lo)
        if m <= mid - lo:
            outer.append(_subtree(leaf_hashes, mid, hi))
            hi = mid
        else:
            outer.append(_subtree(leaf_hashes, lo, mid))
            m -= mid - lo
            lo, complete = mid, False
    proof = [] if complete else [_subtree(leaf_hashes, lo, hi)]
    proof.extend(reversed(outer))
    return proof


def _is_hash(value: object) -> bool:
    return isinstance(value, bytes | bytearray) and len(value) == HASH_SIZE


def _hash_list(proof: Sequence[bytes]) -> list[bytes] | None:
    """The proof as a list of 32-byte hashes, or None when it is anything else."""
    if isinstance(proof, bytes | bytearray | str):  # sequences of ints or characters
        return None
    try:
        items = list(proof)
    except TypeError:
        return None
    return [bytes(h) for h in items] if all(_is_hash(h) for h in items) else None


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def verify_inclusion(leaf_hash: bytes, index: int, tree_size: int, proof: Sequence[bytes],
                     root: bytes) -> bool:
    """Whether ``proof`` shows ``leaf_hash`` at ``index`` in the tree of ``tree_size``
    leaves whose head is ``root``: the algorithm of RFC 9162 §2.1.3.2.

    Untrusted input: anything malformed (a wrong-sized hash, a proof of the wrong length,
    an index outside the tree) is simply not a proof, so the answer is False, not an error.
    """
    path = _hash_list(proof)
    if (path is None or not _is_hash(leaf_hash) or not _is_hash(root)
            or not (_is_size(index) and _is_size(tree_size)) or not 0 <= index < tree_size):
        return False
    fn, sn, r = index, tree_size - 1, bytes(leaf_hash)
    for p in path:
        if sn == 0:
            return False  # the proof is longer than the tree is high
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:  # skip the levels where we are a lone right edge
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes,
                       proof: Sequence[bytes]) -> bool:
    """Whether ``proof`` shows the tree of ``new_size`` leaves with head ``new_root``
    extends the one of ``old_size`` leaves with head ``old_root``: RFC 9162 §2.1.4.2.

    Equal sizes take the empty proof RFC 6962's PROOF gives them (RFC 9162's algorithm
    alone would refuse it) and then hold only when the roots are equal.  An old size of 0
    proves nothing and is refused, as transparency-dev/merkle does.  Never raises.
    """
    path = _hash_list(proof)
    if (path is None or not _is_hash(old_root) or not _is_hash(new_root)
            or not (_is_size(old_size) and _is_size(new_size))
            or not 0 < old_size <= new_size):
        return False
    if old_size == new_size:
        return not path and old_root == new_root
    if not path:
        return False
    if (old_size & (old_size - 1)) == 0:  # a power of two: the old tree is a proof node
        path.insert(0, bytes(old_root))
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == old_root and sr == new_root


def trace_leaf(trace_key: str, version: int, head_hash: str) -> bytes:
    """The leaf data for one trace's chain head: an encoding no other input shares.

    Prefix (names the format and its version) + 4-byte big-endian length + the key's UTF-8
    + 8-byte big-endian version + the 32 raw bytes of ``head_hash``.  The key is the only
    variable-length field; its length prefix makes the bytes readable front to back, so no
    key can absorb the bytes of another field, now or when fields are added.  Only
    lowercase hex is accepted so that one head has exactly one spelling.
    """
    if not isinstance(trace_key, str):
        raise TypeError(f"trace_key must be a str, not {type(trace_key).__name__}.")
    if not _is_size(version):
        raise TypeError(f"version must be an int, not {type(version).__name__}.")
    if not 0 <= version < 1 << 64:
        raise ValueError(f"version must be between 0 and 2**64 - 1, not {version}.")
    if not isinstance(head_hash, str) or not _HEX64.fullmatch(head_hash):
        raise ValueError(f"head_hash must be 64 lowercase hex characters, not {head_hash!r}.")
    key = trace_key.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError (ValueError)
    if len(key) >= 1 << 32:
        raise ValueError(f"trace_key is {len(key)} bytes of UTF-8; the limit is 2**32 - 1.")
    return (TRACE_LEAF_PREFIX + len(key).to_bytes(4, "big") + key
            + version.to_bytes(8, "big") + bytes.fromhex(head_hash))


__all__ = ["EMPTY_ROOT", "HASH_SIZE", "TRACE_LEAF_PREFIX", "consistency_proof",
           "inclusion_proof", "leaf_hash", "node_hash", "root", "root_of_hashes", "trace_leaf",
           "verify_consistency", "verify_inclusion"]
