"""Where an input becomes events: planning, appending and deciding, in one package.

Everything that turns outside facts into stored events lives here, from the bytes to the
transaction:

* ``pipeline`` -- the one entry point every writer calls (``ingest``, ``ingest-batch``,
  ``replay`` and the agent-run branch): decoded input and a store in, an ``IngestOutcome``
  out.  The CLI only reads files and renders;
* ``planner`` -- a capture or a decoded projection into an ``IngestPlan`` (pure: bytes in,
  plan out), with ``plan`` (ids, origins, bindings, the envelope events every plan
  shares), ``projection`` and ``fast`` (JSON arrays of decoded events, planned lazily);
* ``agent`` -- seed 001 agent-run reports and results into events;
* ``replay`` -- a scenario of interleaved readers into events (pure);
* ``evidence`` -- the application's own facts (a retry, a Stop, what it wrote where);
* ``decisions`` and ``decide`` -- the ``release.decided`` events a write makes final,
  planned from the events and appended in the same transaction.

The names ``tracestore.ingest`` exported as a module (``plan_ingest``, ``IngestPlan``,
``event_id`` …) are still importable from here; they load on first use, so importing one
submodule (``tracestore.ingest.decisions``) does not load the decoders.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracestore.ingest.plan import (
        DRAIN_OUTCOMES, ORIGINS, SYNTHETIC_CAPTURE, Bindings, IngestPlan, binding_events,
        check_binding_conflicts, default_attempt_id, envelope, event_id, id_prefix,
        origin_label,
    )
    from tracestore.ingest.planner import capture_drain, plan_capture, plan_ingest
    from tracestore.ingest.projection import (
        PROJECTION_APIS, detect_projection_api, is_label, plan_projection,
        plan_projection_fast, projection_api_of,
    )

_HOMES = {
    **dict.fromkeys(("DRAIN_OUTCOMES", "ORIGINS", "SYNTHETIC_CAPTURE", "Bindings", "IngestPlan",
                     "binding_events", "check_binding_conflicts", "default_attempt_id",
                     "envelope", "event_id", "id_prefix", "origin_label"),
                    "tracestore.ingest.plan"),
    **dict.fromkeys(("capture_drain", "plan_capture", "plan_ingest"),
                    "tracestore.ingest.planner"),
    **dict.fromkeys(("PROJECTION_APIS", "detect_projection_api", "is_label", "plan_projection",
                     "plan_projection_fast", "projection_api_of"),
                    "tracestore.ingest.projection"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tracestore.ingest' has no attribute {name!r}")
    return getattr(import_module(home), name)


__all__ = [
    "DRAIN_OUTCOMES", "ORIGINS", "PROJECTION_APIS", "SYNTHETIC_CAPTURE", "Bindings",
    "IngestPlan", "binding_events", "capture_drain", "check_binding_conflicts",
    "default_attempt_id", "detect_projection_api", "envelope", "event_id", "id_prefix",
    "is_label", "origin_label", "plan_capture", "plan_ingest", "plan_projection",
    "plan_projection_fast", "projection_api_of",
]
