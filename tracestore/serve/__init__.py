"""``tracestore serve``: the reviewer's desk in a browser (Starlette + uvicorn).

``app.desk_app`` is the ASGI app over one open store; ``server.serve`` runs it until
interrupted, ``server.RunningDesk`` in a thread (tests, the benchmark).  The pages are the
report's templates (``tracestore/report/templates``): one set for ``report --html`` and
the desk.
"""
