"""Deprecated path, kept for one release: the module is ``tracestore.ingest.agent``.

``tracestore.agent.ingest`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.ingest.agent as _module

sys.modules[__name__] = _module
