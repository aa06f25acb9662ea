"""``tracestore proxy``: a recording reverse proxy for applications in any language.

An application points its SDK's base URL at the proxy (``OPENAI_BASE_URL=http://127.0.0.1:8787/v1``);
every request is forwarded byte for byte, and every streamed response is recorded as an
attempt through the same ``Recorder`` as the library.  ``app.py`` forwards (Starlette,
httpx), ``writer.py`` records (one writer thread, never on the forwarding path),
``server.py`` runs it (uvicorn).  See docs/recording.md, "The recording proxy".
"""
