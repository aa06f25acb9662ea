"""Deprecated path, kept for one release: the module is ``tracestore.projections.envelope``.

``tracestore.contracts.envelope`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.projections.envelope as _module

sys.modules[__name__] = _module
