"""RFC 6962 / RFC 9162 Merkle hashing (tracestore/store/merkle.py).

Three kinds of evidence:

* known answers copied from transparency-dev/merkle (the Go library behind Trillian and
  the CT ecosystem, successor of google/certificate-transparency-go's merkle package);
* every tree size 1..64 against a reference written straight from RFC 6962's recursive
  definitions (slices, no cleverness): the roots and proofs must be equal, and the RFC
  9162 verifiers must accept exactly what the reference verifier accepts;
* the trace_leaf encoding decoded back (so it is injective) and its refusals.
"""

from __future__ import annotations

import base64
import hashlib
import time
import tracemalloc
from collections.abc import Sequence

import pytest

from tracestore.store.merkle import (
    EMPTY_ROOT,
    TRACE_LEAF_PREFIX,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    root_of_hashes,
    trace_leaf,
    verify_consistency,
    verify_inclusion,
)

h = bytes.fromhex

# -- known answers ---------------------------------------------------------------------
# From github.com/transparency-dev/merkle, file testonly/constants.go (commit
# 417fb0c314750d94e53942e9f92e79b6d35915db): LeafInputs(), NodeHashes(), RootHashes().
LEAVES = [h(x) for x in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                         "606162636465666768696a6b6c6d6e6f")]
NODE_HASHES = [[h(x) for x in level] for level in (
    ("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
     "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
     "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
     "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
     "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
     "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
     "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
     "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"),
    ("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
     "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
     "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
     "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
    ("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
     "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",),
)]
ROOTS = [h(x) for x in (  # indexed by tree size, from the empty tree
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
)]
LEAF_HASHES = NODE_HASHES[0]

# From github.com/transparency-dev/merkle, file proof/verify_test.go at commit
# 9ca563d3ac2bab915317cf153ed4f952f6e74c07 (before its vectors moved to testdata/*.json):
# inclusionProofs and consistencyProofs.  There the leaf is 1-based; here it is the index.
INCLUSION_VECTORS = [
    (0, 1, []),
    (0, 8, [h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4")]),
    (5, 8, [h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7")]),
    (2, 3, [h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125")]),
    (1, 5, [h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b")]),
]
CONSISTENCY_VECTORS = [
    (1, 1, []),
    (1, 8, [h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4")]),
    (6, 8, [h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7")]),
    (2, 5, [h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b")]),
    (6, 7, [h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7")]),
]
# Same file and commit: the two fixed hashes its corruptions use.
SOME_HASH = h("abacaba000000000000000000000000000000000000000000060061e00123456")
EMPTY_TREE_HASH = h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")


def test_leaf_and_node_hashes_match_the_published_node_hashes() -> None:
    assert [leaf_hash(d) for d in LEAVES] == NODE_HASHES[0]
    for level in range(1, 4):
        below = NODE_HASHES[level - 1]
        assert [node_hash(below[2 * i], below[2 * i + 1]) for i in range(len(below) // 2)] \
            == NODE_HASHES[level]


def test_roots_of_every_prefix_match_the_published_roots() -> None:
    assert EMPTY_ROOT == ROOTS[0] == EMPTY_TREE_HASH == hashlib.sha256(b"").digest()
    assert [root(LEAVES[:n]) for n in range(9)] == ROOTS
    assert [root_of_hashes(LEAF_HASHES[:n]) for n in range(9)] == ROOTS
    assert root_of_hashes(iter(LEAF_HASHES)) == ROOTS[8]  # a one-pass iterator is enough


@pytest.mark.parametrize(("index", "size", "proof"), INCLUSION_VECTORS)
def test_published_inclusion_proofs_are_generated_and_verify(
        index: int, size: int, proof: list[bytes]) -> None:
    assert inclusion_proof(LEAF_HASHES[:size], index) == proof
    assert verify_inclusion(LEAF_HASHES[index], index, size, proof, ROOTS[size]) is True


@pytest.mark.parametrize(("old", "new", "proof"), CONSISTENCY_VECTORS)
def test_published_consistency_proofs_are_generated_and_verify(
        old: int, new: int, proof: list[bytes]) -> None:
    assert consistency_proof(LEAF_HASHES[:new], old) == proof
    assert verify_consistency(old, new, ROOTS[old], ROOTS[new], proof) is True


def _inclusion_corruptions(leaf: bytes, index: int, size: int, proof: list[bytes], rt: bytes
                           ) -> list[tuple[bytes, int, int, list[bytes], bytes]]:
    """corruptInclusionProof of the same Go file, in verify_inclusion's argument order."""
    probes = [(leaf, index - 1, size, proof, rt), (leaf, index + 1, size, proof, rt),
              (leaf, index ^ 2, size, proof, rt), (leaf, index, size * 2, proof, rt),
              (leaf, index, size // 2, proof, rt), (b"WrongLeaf", index, size, proof, rt),
              (leaf, index, size, proof, EMPTY_TREE_HASH), (leaf, index, size, proof, SOME_HASH),
              (leaf, index, size, [*proof, b""], rt), (leaf, index, size, [*proof, rt], rt),
              (leaf, index, size, [b"", *proof], rt), (leaf, index, size, [rt, *proof], rt)]
    for i in range(len(proof)):
        flipped = list(proof)
        flipped[i] = bytes([proof[i][0] ^ 8]) + proof[i][1:]
        probes.append((leaf, index, size, flipped, rt))
    if proof:
        probes.append((leaf, index, size, proof[:-1], rt))
    if len(proof) > 1:
        probes.append((leaf, index, size, [proof[0], SOME_HASH, *proof[1:]], rt))
    return probes


@pytest.mark.parametrize(("index", "size", "proof"), INCLUSION_VECTORS[1:])
def test_published_inclusion_corruptions_are_refused(
        index: int, size: int, proof: list[bytes]) -> None:
    probes = _inclusion_corruptions(LEAF_HASHES[index], index, size, proof, ROOTS[size])
    assert len(probes) == 13 + len(proof) + (len(proof) > 1)
    assert [verify_inclusion(*p) for p in probes] == [False] * len(probes)
    assert verify_inclusion(LEAF_HASHES[index], index, size, proof, ROOTS[size]) is True


def _consistency_corruptions(old: int, new: int, r1: bytes, r2: bytes, proof: list[bytes]
                             ) -> list[tuple[int, int, bytes, bytes, list[bytes]]]:
    """corruptConsistencyProof of the same Go file: each must be refused."""
    probes = [(old - 1, new, r1, r2, proof), (old + 1, new, r1, r2, proof),
              (old ^ 2, new, r1, r2, proof), (old, new * 2, r1, r2, proof),
              (old, new // 2, r1, r2, proof), (old, new, b"WrongRoot", r2, proof),
              (old, new, r1, b"WrongRoot", proof), (old, new, r2, r1, proof),
              (old, new, r1, r2, []), (old, new, r1, r2, [*proof, b""]),
              (old, new, r1, r2, [*proof, r1]), (old, new, r1, r2, [*proof, r2]),
              (old, new, r1, r2, [b"", *proof]), (old, new, r1, r2, [r1, *proof]),
              (old, new, r1, r2, [r2, *proof]), (old, new, r1, r2, [proof[0], *proof]),
              (old, new, r1, r2, proof[:-1])]
    for i in range(len(proof)):
        flipped = list(proof)
        flipped[i] = bytes([proof[i][0] ^ 16]) + proof[i][1:]
        probes.append((old, new, r1, r2, flipped))
    return probes


@pytest.mark.parametrize(("old", "new", "proof"), CONSISTENCY_VECTORS[1:])
def test_published_consistency_corruptions_are_refused(
        old: int, new: int, proof: list[bytes]) -> None:
    probes = _consistency_corruptions(old, new, ROOTS[old], ROOTS[new], proof)
    assert len(probes) == 17 + len(proof)
    assert [verify_consistency(*p) for p in probes] == [False] * len(probes)
    assert verify_consistency(old, new, ROOTS[old], ROOTS[new], proof) is True


def b64(text: str) -> bytes:
    return base64.b64decode(text)


E = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="  # the empty root, base64
R = "q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY="  # SOME_HASH, base64
D = "DTrtAjFI/9KiWfvQzcf7PPl1ZYdg03dbgq9vkKrMLfw="  # leaf_hash(b"data"), base64

# From github.com/transparency-dev/merkle, testdata/inclusion/additional/*/*.json and
# testdata/inclusion/single-entry/*.json (commit 417fb0c3...): leafIdx, treeSize,
# leafHash, root -> wantErr false?  (Every proof there is empty.)
INCLUSION_EDGE_PROBES = [
    *[(i, n, leaf, rt, False) for i, n in ((0, 0), (0, 1), (1, 0), (2, 1))
      for leaf, rt in ((R, E), ("", E), (R, ""))],
    (0, 1, "", D, False), (0, 1, "", "", False), (0, 1, D, "", False), (0, 1, D, D, True),
]


def test_the_base64_constants_are_what_their_comments_say() -> None:
    assert (b64(E), b64(R), b64(D)) == (EMPTY_ROOT, SOME_HASH, leaf_hash(b"data"))
    assert (b64(A1), b64(A2)) == (b"don't care 1", b"don't care 2")


@pytest.mark.parametrize(("index", "size", "leaf", "rt", "valid"), INCLUSION_EDGE_PROBES)
def test_published_inclusion_edge_probes(index: int, size: int, leaf: str, rt: str,
                                         valid: bool) -> None:
    assert verify_inclusion(b64(leaf), index, size, [], b64(rt)) is valid


A1, A2 = "ZG9uJ3QgY2FyZSAx", "ZG9uJ3QgY2FyZSAy"  # b"don't care 1" / "2": 12 bytes
# From github.com/transparency-dev/merkle, testdata/consistency/additional/*.json (commit
# 417fb0c3...): size1, size2, root1, root2, proof -> valid?  One deliberate difference:
# sizes-are-equal-one-and-proof-is-empty passes 12-byte roots, which that library accepts
# (equal sizes, equal bytes); here a root that is not 32 bytes is never a tree head.
CONSISTENCY_EDGE_PROBES = [
    (0, 1, E, E, [E], False), (0, 0, E, A2, [], False), (1, 1, E, A2, [], False),
    (2, 1, A1, A2, [], False), (1, 0, A1, A2, [], False), (0, 1, A1, A2, [], False),
    (0, 1, E, A2, [], False),
    (1, 1, A2, A2, [], False),  # the deliberate difference (12-byte roots)
    (1, 1, A1, A2, [], False),
    (0, 0, A1, A1, [], False), (0, 0, A1, A2, [], False), (1, 2, A1, A2, [], False),
    (1, 1, E, E, [E], False), (0, 0, E, E, [E], False),
    (1, 1, E, E, [], True),  # the 32-byte form of sizes-are-equal-one-and-proof-is-empty
]


@pytest.mark.parametrize(("old", "new", "r1", "r2", "proof", "valid"), CONSISTENCY_EDGE_PROBES)
def test_published_consistency_edge_probes(old: int, new: int, r1: str, r2: str,
                                           proof: list[str], valid: bool) -> None:
    assert verify_consistency(old, new, b64(r1), b64(r2), [b64(p) for p in proof]) is valid


# -- the reference: RFC 6962 §2.1 read literally -----------------------------------------

def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def ref_mth(hashes: Sequence[bytes]) -> bytes:
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = _k(len(hashes))
    return hashlib.sha256(b"\x01" + ref_mth(hashes[:k]) + ref_mth(hashes[k:])).digest()


def ref_path(m: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """PATH(m, D[lo:hi]) as the leaf ranges of its subtree hashes."""
    if hi - lo == 1:
        return []
    k = _k(hi - lo)
    if m < k:
        return [*ref_path(m, lo, lo + k), (lo + k, hi)]
    return [*ref_path(m - k, lo + k, hi), (lo, lo + k)]


def ref_subproof(m: int, lo: int, hi: int, b: bool) -> list[tuple[int, int]]:
    """SUBPROOF(m, D[lo:hi], b) as leaf ranges."""
    if m == hi - lo:
        return [] if b else [(lo, hi)]
    k = _k(hi - lo)
    if m <= k:
        return [*ref_subproof(m, lo, lo + k, b), (lo + k, hi)]
    return [*ref_subproof(m - k, lo + k, hi, False), (lo, lo + k)]


def ref_rebuild(lo: int, hi: int, known: dict[tuple[int, int], bytes]) -> bytes:
    """MTH(D[lo:hi]) from the subtree hashes a proof supplies, per the RFC's split."""
    if (lo, hi) in known:
        return known[(lo, hi)]
    k = _k(hi - lo)
    return node_hash(ref_rebuild(lo, lo + k, known), ref_rebuild(lo + k, hi, known))


def ref_verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes],
                         rt: bytes) -> bool:
    if not 0 <= index < size:
        return False
    ranges = ref_path(index, 0, size)
    if len(ranges) != len(proof):
        return False
    known = dict(zip(ranges, proof))
    known[(index, index + 1)] = leaf
    return ref_rebuild(0, size, known) == rt


def ref_verify_consistency(old: int, new: int, r1: bytes, r2: bytes,
                           proof: list[bytes]) -> bool:
    if not 0 < old <= new:
        return False
    if old == new:
        return not proof and r1 == r2
    ranges = ref_subproof(old, 0, new, True)
    if len(ranges) != len(proof):
        return False
    known = dict(zip(ranges, proof))
    known.setdefault((0, old), r1)  # a complete old tree is its own proof node
    return ref_rebuild(0, old, known) == r1 and ref_rebuild(0, new, known) == r2


def test_the_reference_agrees_with_the_published_answers() -> None:
    assert [ref_mth(LEAF_HASHES[:n]) for n in range(9)] == ROOTS
    for index, size, proof in INCLUSION_VECTORS:
        assert ref_verify_inclusion(LEAF_HASHES[index], index, size, proof, ROOTS[size])
    for old, new, proof in CONSISTENCY_VECTORS:
        assert ref_verify_consistency(old, new, ROOTS[old], ROOTS[new], proof)


# -- every tree of 1..64 leaves ----------------------------------------------------------
DATA = [f"leaf {i}".encode() for i in range(64)]
HASHES = [leaf_hash(d) for d in DATA]
SIZES = range(1, 65)


def flip(value: bytes, bit: int) -> bytes:
    out = bytearray(value)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def test_roots_equal_the_reference_for_every_size() -> None:
    assert [root(DATA[:n]) for n in range(65)] == [ref_mth(HASHES[:n]) for n in range(65)]
    assert [root_of_hashes(HASHES[:n]) for n in range(65)] == [root(DATA[:n])
                                                                for n in range(65)]


#: Inclusion proofs (every index, every wrong leaf, index, size and bit) cost the square of
#: the size: the default run takes every tree up to 33 leaves (every shape up to five
#: levels and the first of six) and 48, 63 and 64; the other sizes run with -m slow.
INCLUSION_SIZES = [size if size <= 33 or size in (48, 63, 64)
                   else pytest.param(size, marks=pytest.mark.slow) for size in SIZES]


@pytest.mark.parametrize("size", INCLUSION_SIZES)
def test_inclusion_proofs_of_every_index(size: int) -> None:
    leaves, rt = HASHES[:size], ref_mth(HASHES[:size])
    for index in range(size):
        proof = inclusion_proof(leaves, index)
        assert proof == [ref_mth(HASHES[a:b]) for a, b in ref_path(index, 0, size)]
        assert verify_inclusion(leaves[index], index, size, proof, rt) is True
        others = [i for i in range(size) if i != index]
        assert [verify_inclusion(leaves[i], index, size, proof, rt) for i in others] \
            == [False] * len(others)  # a different leaf
        assert [verify_inclusion(leaves[index], i, size, proof, rt) for i in others] \
            == [False] * len(others)  # a wrong index
        # A wrong size: the hashes do not commit to the size (the signed head does), so a
        # claim is refused exactly when the proof cannot rebuild the root under that size.
        claims = range(1, 2 * size + 2)
        assert [verify_inclusion(leaves[index], index, n, proof, rt) for n in claims] \
            == [ref_verify_inclusion(leaves[index], index, n, proof, rt) for n in claims]
        for bit in (0, 7, 130, 255):  # a flipped bit anywhere: leaf, root, each element
            assert verify_inclusion(flip(leaves[index], bit), index, size, proof, rt) is False
            assert verify_inclusion(leaves[index], index, size, proof, flip(rt, bit)) is False
            assert [verify_inclusion(leaves[index], index, size,
                                     [*proof[:j], flip(proof[j], bit), *proof[j + 1:]], rt)
                    for j in range(len(proof))] == [False] * len(proof)
        assert verify_inclusion(leaves[index], index, size, [*proof, rt], rt) is False
        if proof:
            assert verify_inclusion(leaves[index], index, size, proof[:-1], rt) is False
            assert verify_inclusion(leaves[index], index, size, proof[::-1], rt) is (
                len(proof) == 1)


@pytest.mark.parametrize("new", SIZES)
def test_consistency_proofs_of_every_old_size(new: int) -> None:
    r2 = ref_mth(HASHES[:new])
    for old in range(1, new + 1):
        r1 = ref_mth(HASHES[:old])
        proof = consistency_proof(HASHES[:new], old)
        assert proof == [ref_mth(HASHES[a:b]) for a, b in ref_subproof(old, 0, new, True)]
        assert verify_consistency(old, new, r1, r2, proof) is True
        if old == new:
            assert proof == []
            assert verify_consistency(old, new, r1, flip(r2, 3), proof) is False
            assert verify_consistency(old, new, r1, r2, [r1]) is False
            continue
        claims = {(old - 1, new), (old + 1, new), (old ^ 2, new), (old, new * 2),
                  (old, new // 2), (old, new - 1), (old, new + 1), (old + 1, new + 1)}
        assert {c: verify_consistency(*c, r1, r2, proof) for c in claims} \
            == {c: ref_verify_consistency(*c, r1, r2, proof) for c in claims}
        for bit in (0, 7, 130, 255):
            assert verify_consistency(old, new, flip(r1, bit), r2, proof) is False
            assert verify_consistency(old, new, r1, flip(r2, bit), proof) is False
            assert [verify_consistency(old, new, r1, r2,
                                       [*proof[:j], flip(proof[j], bit), *proof[j + 1:]])
                    for j in range(len(proof))] == [False] * len(proof)
        assert verify_consistency(old, new, r2, r1, proof) is False
        assert verify_consistency(old, new, r1, r2, proof[:-1]) is False
        assert verify_consistency(old, new, r1, r2, [*proof, proof[-1]]) is False
        assert verify_consistency(old, new, r1, r2, [proof[0], *proof]) is False
        assert verify_consistency(old, new, r1, r2, []) is False


def test_some_wrong_sizes_rebuild_the_same_heads() -> None:
    """Why the wrong-size checks compare with the reference instead of expecting False:
    the proof of (1, 2) is [leaf 1], and it rebuilds the same two heads under the claims
    (2, 3) and (2, 4) -- the hashes alone never bind the sizes; the signed tree head does."""
    r1, r2 = ref_mth(HASHES[:1]), ref_mth(HASHES[:2])
    proof = consistency_proof(HASHES[:2], 1)
    claims = [(1, 2), (2, 3), (2, 4), (1, 3), (2, 5), (3, 4)]
    assert [verify_consistency(*c, r1, r2, proof) for c in claims] \
        == [ref_verify_consistency(*c, r1, r2, proof) for c in claims] \
        == [True, True, True, False, False, False]


# -- refusals ----------------------------------------------------------------------------

def test_bad_requests_raise_value_error_with_a_sentence() -> None:
    with pytest.raises(ValueError, match=r"^Leaf index 8 is outside a tree of 8 leaves\.$"):
        inclusion_proof(LEAF_HASHES, 8)
    with pytest.raises(ValueError, match=r"^Leaf index -1 is outside a tree of 8 leaves\.$"):
        inclusion_proof(LEAF_HASHES, -1)
    with pytest.raises(ValueError, match=r"^Leaf index 0 is outside a tree of 0 leaves\.$"):
        inclusion_proof([], 0)
    with pytest.raises(ValueError, match=r"empty tree proves nothing: old_size must be at "
                                         r"least 1, not 0\.$"):
        consistency_proof(LEAF_HASHES, 0)
    with pytest.raises(ValueError, match=r"not -3\.$"):
        consistency_proof(LEAF_HASHES, -3)
    with pytest.raises(ValueError, match=r"^old_size 9 is larger than the tree's 8 leaves\.$"):
        consistency_proof(LEAF_HASHES, 9)
    with pytest.raises(ValueError, match=r"^Leaf hash 2 is 31 bytes long, not 32\.$"):
        root_of_hashes([HASHES[0], HASHES[1], HASHES[2][:31]])
    with pytest.raises(ValueError, match=r"^Leaf hash 3 is 0 bytes long, not 32\.$"):
        inclusion_proof([*HASHES[:3], b"", HASHES[4]], 0)
    with pytest.raises(ValueError, match=r"^Leaf hash 0 is 33 bytes long, not 32\.$"):
        inclusion_proof([HASHES[0] + b"!", HASHES[1]], 1)  # even the proven leaf's own
    with pytest.raises(ValueError, match=r"^Leaf hash 1 is 31 bytes long, not 32\.$"):
        consistency_proof([HASHES[0], HASHES[1][1:], HASHES[2]], 2)


GARBAGE_PROOFS: list[object] = [None, 5, "abc", b"x" * 32, HASHES[0], [None], [b"x" * 31],
                                [b"x" * 33], ["a" * 32], [HASHES[0], 7], [HASHES[0]] * 100]


@pytest.mark.parametrize("proof", GARBAGE_PROOFS)
def test_verifiers_answer_false_for_malformed_proofs_and_never_raise(proof: object) -> None:
    leaf, rt = LEAF_HASHES[0], ROOTS[8]
    assert verify_inclusion(leaf, 0, 8, proof, rt) is False  # type: ignore[arg-type]
    assert verify_consistency(1, 8, ROOTS[1], rt, proof) is False  # type: ignore[arg-type]


def test_verifiers_answer_false_for_malformed_arguments() -> None:
    proof = inclusion_proof(LEAF_HASHES, 0)
    cproof = consistency_proof(LEAF_HASHES, 1)
    bad: list[object] = [None, "0", 0.0, True, -1, 2**70]
    for value in bad:
        assert verify_inclusion(LEAF_HASHES[0], value, 8, proof, ROOTS[8]) is False  # type: ignore[arg-type]
        assert verify_inclusion(LEAF_HASHES[0], 0, value, proof, ROOTS[8]) is False  # type: ignore[arg-type]
        assert verify_consistency(value, 8, ROOTS[1], ROOTS[8], cproof) is False  # type: ignore[arg-type]
        assert verify_consistency(1, value, ROOTS[1], ROOTS[8], cproof) is False  # type: ignore[arg-type]
    for hash_ in (None, "", b"", LEAF_HASHES[0][:31], LEAF_HASHES[0] + b"\x00", "a" * 32):
        assert verify_inclusion(hash_, 0, 8, proof, ROOTS[8]) is False  # type: ignore[arg-type]
        assert verify_inclusion(LEAF_HASHES[0], 0, 8, proof, hash_) is False  # type: ignore[arg-type]
        assert verify_consistency(1, 8, hash_, ROOTS[8], cproof) is False  # type: ignore[arg-type]
        assert verify_consistency(1, 8, ROOTS[1], hash_, cproof) is False  # type: ignore[arg-type]
    # bytearray and tuple inputs are fine at run time: only the values matter
    assert verify_inclusion(bytearray(LEAF_HASHES[0]), 0, 8, tuple(proof),  # type: ignore[arg-type]
                            ROOTS[8]) is True
    assert verify_consistency(1, 8, ROOTS[1], bytearray(ROOTS[8]),  # type: ignore[arg-type]
                              tuple(cproof)) is True


# -- scale -------------------------------------------------------------------------------

def test_a_million_leaves_in_seconds_with_an_independent_answer() -> None:
    """2**20 + 1 equal leaves: the first 2**20 make a perfect tree whose root is the leaf
    hashed up 20 times; the last one hangs off the root's right."""
    n = 2**20
    perfect = leaf_hash(b"x")
    for _ in range(20):
        perfect = node_hash(perfect, perfect)
    started = time.perf_counter()
    got = root([b"x"] * (n + 1))
    elapsed = time.perf_counter() - started
    assert got == node_hash(perfect, leaf_hash(b"x"))
    assert elapsed < 30  # ~1 s on one core; the bound only catches an O(n log n) copy


def test_root_of_a_generator_keeps_only_a_stack() -> None:
    leaf = leaf_hash(b"y")
    expected = leaf
    for _ in range(16):
        expected = node_hash(expected, expected)
    tracemalloc.start()
    try:
        got = root_of_hashes(leaf for _ in range(2**16))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == expected
    assert peak < 16 * 1024  # a list of 65,536 references alone would take 512 KiB


# -- trace_leaf --------------------------------------------------------------------------
G = "0" * 64
HEX = hashlib.sha256(b"head").hexdigest()


def test_trace_leaf_bytes_are_exactly_the_documented_layout() -> None:
    assert trace_leaf("tr-1", 258, HEX) == (
        b"tracestore-trace-head-1\x00" + b"\x00\x00\x00\x04" + b"tr-1"
        + b"\x00\x00\x00\x00\x00\x00\x01\x02" + hashlib.sha256(b"head").digest())
    assert TRACE_LEAF_PREFIX == b"tracestore-trace-head-1\x00"
    assert trace_leaf("é", 0, G) == (TRACE_LEAF_PREFIX + b"\x00\x00\x00\x02\xc3\xa9"
                                     + bytes(8) + bytes(32))
    assert trace_leaf("", 2**64 - 1, "f" * 64) == (TRACE_LEAF_PREFIX + bytes(4)
                                                   + b"\xff" * 8 + b"\xff" * 32)


def decode_trace_leaf(leaf: bytes) -> tuple[str, int, str]:
    assert leaf.startswith(TRACE_LEAF_PREFIX)
    rest = leaf[len(TRACE_LEAF_PREFIX):]
    n = int.from_bytes(rest[:4], "big")
    key, rest = rest[4:4 + n], rest[4 + n:]
    assert len(rest) == 40
    return key.decode("utf-8"), int.from_bytes(rest[:8], "big"), rest[8:].hex()


def test_trace_leaf_is_injective_on_keys_that_move_a_boundary() -> None:
    # Keys that are prefixes of one another, keys ending in bytes that look like a length or
    # a version, keys equal to the prefix: decoding front to back gives every input back.
    sneaky = "k" + "\x00" * 7 + "\x01"
    keys = ["", "k", "kk", "k\x00", "\x00", "\x00\x00\x00\x01k", sneaky, "k" + "\x00" * 8,
            "é", "e\u0301", "\u2028", "😀", "a" * 300, "tracestore-trace-head-1"]
    versions = [0, 1, 2**8, 2**63, 2**64 - 1]
    heads = [G, "ff" * 32, HEX, "00" * 31 + "01"]
    inputs = [(k, v, hh) for k in keys for v in versions for hh in heads]
    leaves = [trace_leaf(*i) for i in inputs]
    assert len(set(leaves)) == len(inputs)
    assert [decode_trace_leaf(x) for x in leaves] == inputs


@pytest.mark.parametrize("bad", ["", "0" * 63, "0" * 65, "A" * 64, "0x" + "0" * 62,
                                 "g" * 64, " " + "0" * 63, "0" * 64 + "\n", "０" * 64])
def test_trace_leaf_refuses_a_head_hash_that_is_not_64_lowercase_hex(bad: str) -> None:
    with pytest.raises(ValueError, match=r"^head_hash must be 64 lowercase hex characters"):
        trace_leaf("k", 0, bad)


def test_trace_leaf_refuses_bad_versions_keys_and_types() -> None:
    with pytest.raises(ValueError, match=r"^version must be between 0 and 2\*\*64 - 1, not -1"):
        trace_leaf("k", -1, G)
    with pytest.raises(ValueError, match=r"not 18446744073709551616\.$"):
        trace_leaf("k", 2**64, G)
    with pytest.raises(ValueError, match=r"^head_hash must be"):
        trace_leaf("k", 0, bytes(32))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^version must be an int, not bool\.$"):
        trace_leaf("k", True, G)
    with pytest.raises(TypeError, match=r"^trace_key must be a str, not bytes\.$"):
        trace_leaf(b"k", 0, G)  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate has no UTF-8
        trace_leaf("\ud800", 0, G)
    assert issubclass(UnicodeEncodeError, ValueError)


def test_trace_leaves_make_a_tree() -> None:
    leaves = [trace_leaf(f"trace-{i}", i, hashlib.sha256(bytes([i])).hexdigest())
              for i in range(5)]
    hashes = [leaf_hash(x) for x in leaves]
    assert root(leaves) == ref_mth(hashes)
    assert verify_inclusion(hashes[3], 3, 5, inclusion_proof(hashes, 3), root(leaves)) is True
