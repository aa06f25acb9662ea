"""The release decision of every body of fixtures/wild/ under an accept-any-text rule.

``python tools/wild_decisions.py`` prints the Markdown table kept in docs/providers.md
("Wild corpus decisions"), grouped by provider, decision and first reason, with the number
of bodies, an example and one line saying why that reason holds or refuses a body;
``tests/test_wild_decisions_doc.py`` checks that the table there is exactly what this prints.
A reason without a justification below is an error: the table cannot silently grow one.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WILD = ROOT / "fixtures" / "wild"

#: One line per held or refused first reason seen on the wild corpus.
WHY = {
    "non_text_content": "reasoning (plain, redacted or encrypted) or a non-text block "
                        "(compaction, server tool result, refusal): not one text answer",
    "tool_use_not_allowed": "the model called a tool; the one-text-answer profile allows none",
    "unexpected_text_block": "a second text block (citations, text around tool use): not one answer",
    "unknown_native_form": "a native shape tracestore does not know: held, never guessed",
    "native_limit_reached": "the provider stopped at its token limit: the answer is cut off",
    "inline_reasoning_text": "reasoning tags (`<think>`) inside the answer text",
    "unknown_stop_reason": "a stop reason the profile does not name as normal",
    "final_text_mismatch": "the provider's final text differs from its deltas",
    "no_native_terminal": "the stream ended ([DONE] or EOF) without the dialect's terminal",
    "native_failure": "the provider's own error (an error event or a whole-body JSON error)",
    "empty_answer": "a normal ending with no text",
    "duplicate_terminal": "a second ending with new content: two answers",
    "second_message_start": "a second start frame in one stream: two messages' frames in one "
                            "attempt (the stream grammar)",
    "unknown_provider": "an API tracestore does not decode (legacy completions, Cohere v1, "
                        "Bedrock Invoke/Agent) or no shape decides: refused, nothing written",
    "invalid_json": "a frame that is not strict JSON (a truncated cassette, a non-JSON body): "
                    "refused, nothing written",
}


def _tool():  # noqa: ANN202 - a module loaded from its path
    spec = importlib.util.spec_from_file_location("real_decisions",
                                                  ROOT / "tools" / "real_decisions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=1)
def decisions() -> tuple[tuple[str, str, str, str], ...]:
    """(body, provider, status, first reason or refusal code) for every indexed wild body."""
    from tracestore.errors import TracestoreError
    from tracestore.projections import decide_release
    tool = _tool()
    out = []
    for line in (WILD / "index.jsonl").read_text("utf-8").splitlines():
        if not line.strip():
            continue
        name = json.loads(line)["file"]
        try:
            api, events = tool._events(WILD / name)
        except TracestoreError as exc:
            out.append((name, "—", "refused", exc.code))
            continue
        d = decide_release(events, "a")
        out.append((name, api, d.status, d.reasons[0] if d.reasons else ""))
    return tuple(out)


def render() -> str:
    groups: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for name, api, status, reason in decisions():
        groups[(api, status, reason)].append(name)
    lines = ["| provider | decision | first reason | bodies | example | why |",
             "|---|---|---|---|---|---|"]
    for (api, status, reason), names in sorted(groups.items()):
        why = "normal ending, clean drain, text accepted" if status == "released" else WHY[reason]
        lines.append(f"| {api} | {status} | `{reason}` | {len(names)} | {sorted(names)[0]} "
                     f"| {why} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
