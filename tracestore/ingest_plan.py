"""Deprecated path, kept for one release: the module is ``tracestore.ingest.plan``.

``tracestore.ingest_plan`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.ingest.plan as _module

sys.modules[__name__] = _module
