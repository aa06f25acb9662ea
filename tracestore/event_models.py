"""Deprecated path, kept for one release: the module is ``tracestore.events.models``.

``tracestore.event_models`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.events.models as _module

sys.modules[__name__] = _module
