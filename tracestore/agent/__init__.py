"""Agent runs (seed 001): the rules, pure and below the projections.

``codes`` (reason, refusal and finding codes), ``checks`` (seed 001's per-decision checks),
``run`` (a run's events folded into a ``RunRecord``), ``admission`` (the re-derived
admission) and ``grading``; they import only the event vocabulary.  Where a run meets
each layer, the code lives in that layer: ``projections.agent_release`` (its release
judge, registered for the ``agent-run`` api), ``ingest.agent`` (run files into events),
``review.agent`` (its review evidence), ``recording.agent`` (``AgentRunRecorder``).
"""
