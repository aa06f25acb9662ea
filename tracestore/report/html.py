"""The trace report as one self-contained HTML page (Jinja2, autoescaping on).

Self-contained means: inline CSS, no script, no font, image or link that would make the
browser fetch anything; a Content-Security-Policy of ``default-src 'none'`` says the same
to the browser, so even a mistake in escaping could not load or run anything.  Escaping is
still the defence: every model text goes through Jinja2's autoescape and none is marked
safe.  Before escaping, every value shown goes through the one neutralizer
(``tracestore.text.neutralize.visible``, the terminal's and the records'): NUL, ESC, C1 controls
such as the 8-bit CSI U+009B, bidi controls, U+2028/9 and lone surrogates become visible
``\\xNN`` / ``\\uNNNN`` text, never raw bytes in the page.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from tracestore.events import ANSWER_DESTINATIONS
from tracestore.projections.reasons import POLICY_VERSION
from tracestore.report.model import TraceReport

#: One symbol per row kind, so a lane reads at a glance (colour is never the only cue).
SYMBOLS = {
    "trace": "●", "open": "▶", "frame": "·", "delta": "¶", "terminal": "◆", "error": "✖",
    "stop": "■", "drain": "⇥", "semantic": "✓", "decision": "⚖", "write": "→",
    "progress": "…", "review": "✎", "segment": "≋", "keepalive": "≋", "fold": "≋",
    "other": "·",
}
#: Up to this many attempts the timeline has one lane (column) per attempt; beyond, one
#: column of events, each named by its attempt ("attempt 7") and coloured by it.
WIDE_LANES: Final = 4
#: A folded run shows its first and last this-many events (with their native JSON) inline.
MEMBERS_SHOWN: Final = 50
#: Distinct lane colours (report.css); lane 65 takes lane 1's colour, its name differs.
LANE_COLOURS: Final = 64


def lane_class(index: int) -> int:
    return 0 if index <= 0 else (index - 1) % LANE_COLOURS + 1


_PLAIN: Final = re.compile(r"[A-Za-z0-9_.~-]*")


def _quote(value: Any) -> str:
    """A path or query component (ids may hold any character; most need no quoting)."""
    text = str(value)
    if _PLAIN.fullmatch(text):
        return text
    from urllib.parse import quote

    return quote(text, safe="")


@functools.lru_cache(maxsize=1)
def environment() -> Any:
    """The one template set: the report file and the desk (``tracestore serve``)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tracestore.report", "templates"),
        autoescape=True,  # every template, whatever its file name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
        finalize=_neutralized,
    )
    env.filters["q"] = _quote
    env.globals.update(lane_class=lane_class, wide_lanes=WIDE_LANES,
                       members_shown=MEMBERS_SHOWN, symbols=SYMBOLS)
    return env


def _neutralized(value: Any) -> Any:
    """Every ``{{ }}`` value, made inert as in every other output (line feeds and tabs are
    layout here, kept); markup the templates build (macros) keeps its safe mark."""
    if type(value) is str and value.isprintable():  # the common case, first
        return value
    from markupsafe import Markup

    from tracestore.report.model import LazyJSON
    from tracestore.text.neutralize import visible

    if isinstance(value, LazyJSON):
        value = str(value)
    if isinstance(value, str) and value.isprintable():
        # Every character the neutralizer rewrites is non-printable to Python (Cc, Cf,
        # Zl, Zp, Cs): printable text is already clean.
        return value
    if isinstance(value, Markup):
        return Markup(visible(str(value), keep="\n\t"))
    if isinstance(value, str):
        return visible(value, keep="\n\t")
    return value


def render_html(report: TraceReport, *, version: str, desk: Any = None) -> str:
    """The page for ``report`` (pure: the same report gives the same bytes); ``desk`` is
    the desk's page context (``tracestore.serve``), None for the self-contained file."""
    template = environment().get_template("trace.html.j2")
    return template.render(
        r=report, version=version, policy=POLICY_VERSION, desk=desk,
        descriptions=report.descriptions, destinations=ANSWER_DESTINATIONS,
        violation_positions={v.position for v in report.violations},
    )


def render_page(name: str, *, version: str, desk: Any = None, **context: Any) -> str:
    """Any other page of the template set (the desk's index and error pages)."""
    return environment().get_template(name).render(version=version, desk=desk, **context)


def render_css() -> str:
    """The stylesheet the desk serves (the file report inlines the same one)."""
    return environment().get_template("report.css").render()
