"""Whether a reviewer's words claim that an answer was released: the conflict check behind
the ``release_decision`` field, and the amend and conflict modules' reading of free text."""

from __future__ import annotations

import re

# A reviewer's words about release: negated claims are removed before looking for a
# positive one, so "not released" is not read as "released".
_NEGATED = re.compile(r"\b(?:not|never|no longer)\s+(?:been\s+|be\s+)?(?:released|eligible|"
                      r"passed|pass|delivered)\b", re.IGNORECASE)
_CLAIMS_RELEASED = re.compile(r"\b(?:released|eligible|pass(?:ed)?|delivered|shipped)\b",
                              re.IGNORECASE)
_CLAIMS_NOT_RELEASED = re.compile(
    r"\b(?:ineligible|unreleased|withheld|blocked|not\s+released|not\s+eligible|"
    r"never\s+released|stopped|held|hold|rejected|fail(?:ed|s)?|interrupted|limited|"
    r"superseded|pending)\b", re.IGNORECASE)


def says_released(text: str) -> bool:
    """The reviewer text claims the answer was (or may be) released."""
    return bool(_CLAIMS_RELEASED.search(_NEGATED.sub(" ", text)))


def says_not_released(text: str) -> bool:
    return bool(_CLAIMS_NOT_RELEASED.search(text))
