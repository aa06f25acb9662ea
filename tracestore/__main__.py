"""``python -m tracestore``: the same command line as the ``tracestore`` script."""

from tracestore.cli import main

if __name__ == "__main__":
    main()
