"""Helpers for bulk work (one ingest of 100k frames).

Building and appending a large ingest allocates hundreds of thousands of small, acyclic
objects (dicts, models, tuples).  CPython's cyclic garbage collector is triggered by
allocation counts and rescans the growing heap again and again while they are made; in
the ingest benchmark that cost more than the SQL inserts themselves.  Nothing we create
in these phases forms reference cycles, so pausing the collector for their duration loses
nothing; reference counting still frees memory as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic GC inside the block; restore the caller's setting afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
