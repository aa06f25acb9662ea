"""Deprecated path, kept for one release: the module is ``tracestore.store.bulk``.

``tracestore.bulk`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.store.bulk as _module

sys.modules[__name__] = _module
