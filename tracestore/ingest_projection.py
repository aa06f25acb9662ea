"""Deprecated path, kept for one release: the module is ``tracestore.ingest.projection``.

``tracestore.ingest_projection`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.ingest.projection as _module

sys.modules[__name__] = _module
