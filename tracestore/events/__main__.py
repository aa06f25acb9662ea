"""``python -m tracestore.events``: print the event reference docs/reference/events.md holds."""

import sys

from tracestore.events.reference import markdown

if __name__ == "__main__":
    sys.stdout.write(markdown())
