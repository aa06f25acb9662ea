"""Deprecated path, kept for one release: the module is ``tracestore.projections.agent_release``.

``tracestore.agent.release`` is the same module object (attributes and patches agree); importing it
prints nothing.  See docs/api.md, "Deprecated paths".
"""

import sys

import tracestore.projections.agent_release as _module

sys.modules[__name__] = _module
