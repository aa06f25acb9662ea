"""Deprecated path, kept for one release: the module is ``tracestore.events.codec``.

``tracestore.event_codec`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.events.codec as _module

sys.modules[__name__] = _module
