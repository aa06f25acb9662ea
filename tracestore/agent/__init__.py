"""Agent runs (seed 001): model decisions, tool observations, re-derived admission and grading."""
