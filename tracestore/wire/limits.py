"""Named bounds for every wire decoder.

Captures come from the network and from files people hand us, so nothing in the wire
layer may buffer without limit.  These constants are the defaults; every decoder takes
``max_frame_bytes`` / ``max_frames`` keyword arguments so a caller (or a test) can
tighten them.  Exceeding a bound is a ``WireError`` with code ``frame_byte_limit`` or
``frame_count_limit``, raised as soon as the bound is passed.
"""

from __future__ import annotations

from typing import Final

#: Largest frame (SSE event block, NDJSON line, JSON-array element, AWS message) in bytes,
#: terminators included.  It also caps the partial buffer held between ``feed`` calls, so
#: a line that never ends stops here instead of eating memory.  8 MiB is far above any
#: real provider frame (the largest fixture frame is tens of KiB) yet small enough to hold.
MAX_FRAME_BYTES: Final[int] = 8 * 1024 * 1024

#: Largest number of frames one decoder (one capture) may emit.  A real stream has a few
#: thousand; a million means a runaway producer or a hostile file.
MAX_FRAMES_PER_CAPTURE: Final[int] = 1_000_000

#: Deepest nesting of arrays/objects in one JSON document (a native, a scenario).  One bound
#: for the whole path, checked when the JSON is parsed: Python's parser stops near 1000
#: levels and pydantic's serializer near 255, so anything between used to parse and then
#: fail to store.  Real provider payloads nest under 20 levels.
MAX_JSON_DEPTH: Final[int] = 128

__all__ = ["MAX_FRAME_BYTES", "MAX_FRAMES_PER_CAPTURE", "MAX_JSON_DEPTH"]
