"""Checkpoints that extend older ones (``tracestore-checkpoint-3``): the leaves grow as a
log, so a newer checkpoint is proved to extend an older one with an RFC 6962 consistency
proof (``checkpoint --consistency OLD NEW``), and ``verify --checkpoint`` checks the store
against the latest heads and every older signed head."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from test_verify_reach import S1, T1, _keyed, _sql, _verify_json, run

from tracestore.store import head_log, merkle
from tracestore.store.tree_head import Leaf, leaves as sorted_leaves

H = "ab" * 32


def _leaves(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _extended(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A store with traces s1 and t1 signed (a.json); then t1 grows and trace u1 is new,
    and b.json extends a.json."""
    db, key, first = _keyed(tmp_path)
    assert run("ingest", str(T1), "--attempt", "t1b", "--trace", "t1", db=db)[0] == 0
    assert run("ingest", str(S1), "--attempt", "u1", db=db)[0] == 0
    second = tmp_path / "b.json"
    code, out, err = run("checkpoint", "--key", str(key), "--out", str(second),
                         "--extends", str(first), db=db)
    assert code == 0, err
    return db, key, first, second


# -- the log, pure ----------------------------------------------------------------------------

def test_an_extension_appends_the_heads_that_moved_in_key_order() -> None:
    before = sorted_leaves({"b": (3, H), "a": (2, H)})
    now = sorted_leaves({"a": (2, H), "b": (5, "cd" * 32), "c": (1, H)})
    appended, back = head_log.extension(before, now)
    assert [(leaf.key, leaf.version) for leaf in appended] == [("b", 5), ("c", 1)]
    assert back == []
    log = [*before, *appended]
    assert head_log.latest_heads(log) == {"a": (2, H), "b": (5, "cd" * 32), "c": (1, H)}
    assert [(leaf.key, leaf.version) for leaf in head_log.history(log)] == [("b", 3)]
    proof = head_log.consistency(log, len(before))
    assert head_log.consistent(len(before), head_log.log_root(before), len(log),
                               head_log.log_root(log), proof)
    forged = [Leaf("a", 1, H), *log[1:]]  # an older head rewritten in the newer log
    assert not head_log.consistent(len(before), head_log.log_root(before), len(forged),
                                   head_log.log_root(forged),
                                   head_log.consistency(forged, len(before)))


def test_a_trace_that_went_back_or_vanished_is_named() -> None:
    before = sorted_leaves({"a": (2, H), "b": (3, H)})
    appended, back = head_log.extension(before, sorted_leaves({"b": (2, H)}))
    assert back == ["a", "b"]
    assert [(leaf.key, leaf.version) for leaf in appended] == [("b", 2)]


def test_a_first_checkpoints_root_is_its_log_root() -> None:
    heads = {"t": (4, H), None: (9, H)}
    assert head_log.log_root(sorted_leaves(heads)) == merkle.root(
        [leaf.data() for leaf in sorted_leaves(heads)]).hex()


# -- the commands -----------------------------------------------------------------------------

def test_a_checkpoint_extending_another_is_proved_consistent_and_verifies(
        tmp_path: Path) -> None:
    db, key, first, second = _extended(tmp_path)
    signed = json.loads(second.read_text())
    assert (signed["format"], signed["tree_size"]) == ("tracestore-checkpoint-3", 4)
    old_leaves, new_leaves = _leaves(tmp_path / "head.json.leaves"), _leaves(
        tmp_path / "b.json.leaves")
    assert new_leaves[:2] == old_leaves
    assert [leaf["trace_id"] for leaf in new_leaves[2:]] == ["t1", "u1"]
    code, out, err = run("checkpoint", "--consistency", str(first), str(second), "--key",
                         str(key), "--json")
    assert code == 0, err
    proof = json.loads(out)
    assert (proof["consistent"], proof["old"]["tree_size"], proof["new"]["tree_size"]) == \
        (True, 2, 4)
    assert head_log.consistent(2, proof["old"]["root"], 4, proof["new"]["root"],
                               proof["proof"])
    code, result = _verify_json(db, "--checkpoint", str(second), "--key", str(key))
    assert (code, result["ok"], result["tree_size"]) == (0, True, 3)
    code, out, err = run("verify", "--json", "--trace", "t1", "--checkpoint", str(second),
                         "--key", str(key), db=db)
    included = json.loads(out)["inclusion"]
    assert (code, included["index"], included["tree_size"]) == (0, 2, 4)
    text = run("checkpoint", "--consistency", str(first), str(second), "--key", str(key))[1]
    assert text.startswith(f"consistent: {second} (position ")
    assert "4 leaves) extends" in text and "(position 21, 2 leaves)" in text


def test_a_newer_log_that_rewrote_an_older_head_is_inconsistent(tmp_path: Path) -> None:
    from tracestore.store import checkpoint as ck

    db, key, first, second = _extended(tmp_path)
    leaves = _leaves(tmp_path / "b.json.leaves")
    leaves[0]["hash"] = H  # s1's older head, forged, then signed again with the key
    forged = tmp_path / "forged.json"
    (tmp_path / "forged.json.leaves").write_text("".join(json.dumps(x) + "\n" for x in leaves))
    log = [Leaf(x["trace_id"], x["version"], x["hash"]) for x in leaves]
    signed = ck.sign(json.loads(second.read_text())["position"], "", "2026-12-05T00:00:00Z",
                     key, tree=(len(log), head_log.log_root(log)), log=True)
    forged.write_text(json.dumps(signed.to_dict()))
    code, out, err = run("checkpoint", "--consistency", str(first), str(forged), "--key",
                         str(key))
    assert code == 3 and "checkpoints_inconsistent" in err
    code, out, err = run("checkpoint", "--consistency", str(second), str(first), "--key",
                         str(key))
    assert code == 3 and "checkpoints_inconsistent" in err  # the newer cannot precede
    assert "it holds fewer leaves: is it the older one?" in err


def test_a_trace_rewritten_between_checkpoints_is_refused_and_caught(tmp_path: Path) -> None:
    from tracestore.store import checkpoint as ck
    from tracestore.store.log import EventStore

    db, key, first, _ = _extended(tmp_path)
    # s1 (signed at version 10 by the first checkpoint) is rewritten: its events deleted
    # and others appended in their place, every chain valid again.
    _sql(db, "DELETE FROM ts_events WHERE trace_id = 's1'")
    assert run("ingest", str(T1), "--attempt", "s1", db=db)[0] == 0
    code, result = _verify_json(db)
    assert (code, result["ok"]) == (0, True)  # alone, the store looks intact
    third = tmp_path / "c.json"
    code, out, err = run("checkpoint", "--key", str(key), "--out", str(third), "--extends",
                         str(first), db=db)
    assert code == 3 and "checkpoint_not_extended" in err and not third.exists()
    # A signer that extends anyway: the older head is still in the log, and verify finds
    # the store no longer holds it.
    with EventStore(f"sqlite:///{db}") as store:
        position = store.head_position()
        now = store.tree_leaves(position)
    old = [Leaf(x["trace_id"], x["version"], x["hash"])
           for x in _leaves(tmp_path / "head.json.leaves")]
    appended, _ = head_log.extension(old, now)
    log = [*old, *appended]
    (tmp_path / "c.json.leaves").write_text("".join(
        json.dumps({"trace_id": x.trace_id, "version": x.version, "hash": x.hash}) + "\n"
        for x in log))
    third.write_text(json.dumps(ck.sign(position, "", "2026-12-05T00:00:00Z", key,
                                        tree=(len(log), head_log.log_root(log)),
                                        log=True).to_dict()))
    code, result = _verify_json(db, "--checkpoint", str(third), "--key", str(key))
    assert (code, result["ok"], result["code"]) == (3, False, "chain_broken")
    assert "trace 's1' no longer holds version" in result["reason"]


def test_a_trace_truncated_after_an_extending_checkpoint_fails_verify(tmp_path: Path) -> None:
    db, key, _, second = _extended(tmp_path)
    _sql(db, "DELETE FROM ts_events WHERE position = (SELECT max(position) FROM ts_events "
             "WHERE trace_id = 'u1')")
    code, result = _verify_json(db, "--checkpoint", str(second), "--key", str(key))
    assert (code, result["ok"]) == (3, False)
    assert "do not hash to the signed tree head" in result["reason"]


@pytest.mark.parametrize("case", ["no-out", "first-format", "leaves-missing",
                                  "leaves-edited"])
def test_bad_extends_inputs_are_refused_and_sign_nothing(tmp_path: Path, case: str) -> None:
    db, key, first = _keyed(tmp_path)
    out = tmp_path / "b.json"
    args = ["checkpoint", "--key", str(key), "--extends", str(first)]
    if case != "no-out":
        args += ["--out", str(out)]
    if case == "first-format":  # signed by the key, but it signs one row, not heads
        from tracestore.store import checkpoint as ck

        first.write_text(json.dumps(ck.sign(1, H, "2026-12-05T00:00:00Z", key).to_dict()))
    if case == "leaves-missing":
        (tmp_path / "head.json.leaves").unlink()
    if case == "leaves-edited":
        leaves = _leaves(tmp_path / "head.json.leaves")
        leaves[0]["version"] -= 1
        (tmp_path / "head.json.leaves").write_text(
            "".join(json.dumps(x) + "\n" for x in leaves))
    code, _, err = run(*args, db=db)
    want = {"no-out": "invalid_option", "first-format": "invalid_checkpoint",
            "leaves-missing": "file_not_found", "leaves-edited": "invalid_checkpoint"}[case]
    assert (code, want in err) == (2, True), err
    assert not out.exists() and not (tmp_path / "b.json.leaves").exists()


def test_the_rows_at_signed_heads_are_found_on_every_backend(store: Any) -> None:
    from tracestore.events import FrameReceived, NewEvent, attempt_stream
    from tracestore.store.head_rows import first_unheld, stored_hashes

    for trace, count in (("x", 3), ("y", 2)):
        store.append([NewEvent(attempt_stream(trace), FrameReceived(
            attempt_id=trace, api="openai-responses",
            native={"type": "response.output_text.delta", "delta": str(n)}), trace_id=trace)
            for n in range(count)])
    signed = store.tree_leaves(store.head_position())
    assert stored_hashes(store, signed) == {(leaf.key, leaf.version): leaf.hash
                                            for leaf in signed}
    assert [(leaf.key, leaf.version) for leaf in signed] == [("x", 3), ("y", 2)]
    assert first_unheld(store, signed) is None
    assert first_unheld(store, [signed[0], Leaf("y", 2, H)]) == Leaf("y", 2, H)
    assert first_unheld(store, [Leaf("y", 9, signed[1].hash)]) == Leaf("y", 9, signed[1].hash)
