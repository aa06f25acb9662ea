"""What the projections' code is: a fingerprint of the installed ``tracestore`` sources.

A projection table holding computed results (``ts_audit_index``: each trace's audit as
``audit --json`` writes it) is only valid for the code that computed it.  Its state row is
named after this fingerprint, so a different tracestore (an upgrade, an edited checkout)
never reads rows another version wrote: it computes live until the rows are rebuilt.
The digest is over every ``.py`` file's path and contents (~3 ms, once per process), so a
reinstall of the same code keeps the rows.
"""

from __future__ import annotations

import functools
import hashlib
import os


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """16 hex digits naming the tracestore sources in this process."""
    import tracestore

    root = os.path.dirname(os.path.abspath(tracestore.__file__))
    files: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
    digest = hashlib.sha256(getattr(tracestore, "__version__", "").encode())
    for path in files:
        digest.update(os.path.relpath(path, root).encode() + b"\0")
        try:
            with open(path, "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()[:16]
