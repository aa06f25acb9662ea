"""Recording a live application: the Recorder API and SDK stream capture (adapters at the edge)."""
