"""Issue 26 item 8: ``--out`` / ``--html`` write atomically only to regular files.

A rename replaces whatever the name pointed at: as root, ``report --html /dev/null`` replaced
the machine's /dev/null with a regular file.  Devices and FIFOs are written through (opened
and written, never renamed over); a symlink keeps its link and its target is replaced
atomically; a folder is refused.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from tracestore.cli.files import atomic_writer, write_atomically
from tracestore.errors import InputError


def test_a_fifo_is_written_through_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_atomically(fifo, "hello\n")
    reader.join(timeout=5)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert got == [b"hello\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temp file left


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_a_character_device_is_written_through_not_replaced(tmp_path: Path) -> None:
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private /dev/null
    except PermissionError:
        pytest.skip("this file system refuses device nodes")
    write_atomically(null, "page")
    assert stat.S_ISCHR(null.lstat().st_mode)
    disk = tmp_path / "disk"
    os.mknod(disk, 0o600 | stat.S_IFBLK, os.makedev(7, 200))  # a loop device number
    with pytest.raises(InputError) as caught:
        write_atomically(disk, "page")  # never written over, never renamed over
    assert caught.value.code == "file_error" and stat.S_ISBLK(disk.lstat().st_mode)


def test_a_symlink_keeps_its_link_and_its_target_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "real" / "report.html"
    target.parent.mkdir()
    target.write_text("old", "utf-8")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    write_atomically(link, "new")
    assert link.is_symlink() and link.readlink() == target
    assert target.read_text("utf-8") == "new"
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "real" / "fresh.html")
    write_atomically(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "real" / "fresh.html").read_text() == "made"


def test_a_folder_is_refused_and_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        write_atomically(tmp_path, "x")
    assert caught.value.code == "file_error"
    target = tmp_path / "keep.txt"
    target.write_text("old", "utf-8")
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write(b"half")
        raise RuntimeError("stopped half way")
    assert target.read_text("utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_report_html_to_a_fifo_through_the_cli(tmp_path: Path) -> None:
    from clihelp import run

    db = tmp_path / "s.db"
    assert run("replay", str(Path(__file__).parents[1] / "fixtures" / "seed003"), db=db)[0] == 0
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = run("report", "t8-buggy-app", "--html", str(fifo), db=db)
    reader.join(timeout=5)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and got[0].startswith(b"<!DOCTYPE html>")
