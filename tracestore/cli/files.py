"""Writing output files (``--out``, ``--html``): atomically, with the user's normal mode.

A temp file from ``tempfile.mkstemp`` is created 0600 and keeps that mode after the rename,
so a report or record would be unreadable to the group the user's umask lets read it.
Creating the temp file with ``os.open(…, 0o666)`` lets the kernel apply the umask exactly as
for any other file the user writes.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from tracestore.errors import InputError


@contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A binary handle whose content replaces ``path`` only when the block succeeds."""
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


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` via a temp file and rename: never a half-written file."""
    with atomic_writer(path) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
