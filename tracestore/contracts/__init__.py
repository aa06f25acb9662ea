"""Output contracts for structured answers (seeds 000 and 004): pure validation of final replies."""
