"""The docs and the package say what is true now, not when or in which issue it became so.

Run logs, issue and session numbers, "this round", "the lead", other helpers' sessions,
load averages and commit hashes of old code are history: it belongs in CHANGELOG.md
(what changed for users) and in git, not in README.md, docs/, examples/ or tracestore/'s
comments.
Figures live once, in docs/explanation/performance.md, without the story of their runs.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Each pattern is one kind of diary.  Word boundaries keep ordinary words out: "sessions"
#: of HTTP or a review, "round trip", "rounds interleaved", an SDK's stream "helper".
DIARY = {
    "issue number": r"\bissues?[ -]#?\d+",
    "session number": r"\bsessions? \d+\b",
    "round of work": r"\b(?:this|previous|first|second|next|last) round\b|\bround \d+\b",
    "the lead": r"\bthe lead\b",
    "helpers' sessions": r"\bhelpers' sessions?\b|\bother helpers\b|\bhelper's (?:tests|session)",
    "load average": r"\bload average\b|\(load \d|\bload \d+(?:\.\d+)?\s*[–-]\s*\d",
    "branch name": r"\bi2\d\b|\bthis branch\b",
    "old commit": r"\b(?:commit|main) [0-9a-f]{7,40}\b",
}
PATTERN = re.compile("|".join(f"(?:{p})" for p in DIARY.values()), re.IGNORECASE)

#: Paths left out of the check (none: every page and module is held to it).
NOT_YET: tuple[str, ...] = ()


def files() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "examples").rglob("*.md")), *sorted((ROOT / "examples").rglob("*.py"))]
    found += sorted(p for p in (ROOT / "tracestore").rglob("*.py")
                    if not p.relative_to(ROOT).as_posix().startswith(NOT_YET))
    return found


def hits() -> list[str]:
    out = []
    for path in files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in PATTERN.finditer(line):
                out.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r} in {line.strip()[:120]}")
    return out


def test_no_diary_in_readme_docs_or_package() -> None:
    assert hits() == []


def test_the_patterns_catch_diary_and_spare_ordinary_words() -> None:
    for diary in ("fixed in issue 19", "issue-26 branch", "session 4, before", "this round",
                  "the lead's follow-up", "four other helpers' sessions", "load average 2.3",
                  "(load 1.7–2.2)", "the i25 branch", "main 2e45f08's code"):
        assert PATTERN.search(diary), diary
    for plain in ("HTTP sessions stay open", "a review session", "a round trip",
                  "rounds interleaved", "best of 3 rounds", "a ``with ….stream(...)`` helper's stream",
                  "the leading frame", "loaded by the CLI", "an issue with the key"):
        assert not PATTERN.search(plain), plain
