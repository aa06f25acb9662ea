"""``python -m tracestore.error_codes``: print the table docs/errors.md holds."""

import sys

from tracestore.error_codes import markdown_table

if __name__ == "__main__":
    sys.stdout.write(markdown_table())
