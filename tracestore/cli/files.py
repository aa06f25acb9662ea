"""Writing output files (``--out``, ``--html``): atomically, with the user's normal mode.

A temp file from ``tempfile.mkstemp`` is created 0600 and keeps that mode after the rename,
so a report or record would be unreadable to the group the user's umask lets read it.
Creating the temp file with ``os.open(…, 0o666)`` lets the kernel apply the umask exactly as
for any other file the user writes.

Only a regular file (or a name that does not exist yet) is replaced by a rename:

* a character device or a FIFO (``/dev/null``, ``/dev/stdout``, a named pipe) is *written
  through*:
  opened and written in place, never renamed over (as root a rename replaced /dev/null with a
  regular file); such a write is not atomic, it is what writing to that device means;
* a block device (a disk) is refused: a report is never written over a disk;
* a symlink is kept: the file it points at (followed to the end) is replaced atomically, in
  the folder of that file, so the link still points at the new content;
* a folder, or any other kind of file, is refused (``file_error``).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from tracestore.errors import InputError


@contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A binary handle whose content replaces ``path`` only when the block succeeds.

    Devices and FIFOs are written through; a symlink's target is replaced (module doc).
    """
    kind = _kind(path)
    if kind == "special":
        with open(path, "wb", buffering=0) as through:
            yield through
        return
    if kind != "regular":
        raise InputError(f"cannot write {path}: it is a {kind}, not a file",
                         code="file_error", path=str(path))
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"cannot write {path}: folder {directory} does not exist",
                         code="file_error", path=str(path))
    tmp = directory / f".{path.name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _kind(path: Path) -> str:
    """``regular`` (also: not there yet, or a dangling link), ``special`` (character device,
    FIFO) or what else it is."""
    try:
        mode = os.stat(path).st_mode  # follows symlinks: what a write would reach
    except FileNotFoundError:
        return "regular"
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "special"
    if stat.S_ISBLK(mode):
        return "block device"
    return "folder" if stat.S_ISDIR(mode) else "socket or other special file"


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` via a temp file and rename: never a half-written file."""
    with atomic_writer(path) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
