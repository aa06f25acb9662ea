"""The trace report as one self-contained HTML page (Jinja2, autoescaping on).

Self-contained means: inline CSS, no script, no font, image or link that would make the
browser fetch anything; a Content-Security-Policy of ``default-src 'none'`` says the same
to the browser, so even a mistake in escaping could not load or run anything.  Escaping is
still the defence: every model text goes through Jinja2's autoescape and none is marked
safe.  Before escaping, every value shown goes through the one neutralizer
(``tracestore.text.neutralize.visible``, the terminal's and the records'): NUL, ESC, C1 controls
such as the 8-bit CSI U+009B, bidi controls, U+2028/9 and lone surrogates become visible
``\\xNN`` / ``\\uNNNN`` text, never raw bytes in the page (issue 26 item 3).
"""

from __future__ import annotations

from typing import Any

from tracestore.events import ANSWER_DESTINATIONS
from tracestore.projections.reasons import POLICY_VERSION
from tracestore.report.model import TraceReport

#: One symbol per row kind, so a lane reads at a glance (colour is never the only cue).
SYMBOLS = {
    "trace": "●", "open": "▶", "frame": "·", "delta": "¶", "terminal": "◆", "error": "✖",
    "stop": "■", "drain": "⇥", "semantic": "✓", "decision": "⚖", "write": "→",
    "progress": "…", "review": "✎", "other": "·",
}


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("tracestore.report", "templates"),
        autoescape=True,  # every template, whatever its file name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
        finalize=_neutralized,
    )


def _neutralized(value: Any) -> Any:
    """Every ``{{ }}`` value, made inert as in every other output (line feeds and tabs are
    layout here, kept); markup the templates build (macros) keeps its safe mark."""
    from markupsafe import Markup

    from tracestore.text.neutralize import visible

    if isinstance(value, Markup):
        return Markup(visible(str(value), keep="\n\t"))
    if isinstance(value, str):
        return visible(value, keep="\n\t")
    return value


def render_html(report: TraceReport, *, version: str) -> str:
    """The page for ``report`` (pure: the same report gives the same bytes)."""
    template = _environment().get_template("trace.html.j2")
    return template.render(
        r=report, version=version, policy=POLICY_VERSION, symbols=SYMBOLS,
        descriptions=report.descriptions, destinations=ANSWER_DESTINATIONS,
        violation_positions={v.position for v in report.violations},
    )
