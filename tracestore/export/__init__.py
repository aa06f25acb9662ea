"""Exports of the event log (JSON lines, OpenTelemetry) and import."""
