"""UTF-8 checks shared by the text framings (SSE, NDJSON, chunks, JSON array).

Every text framing ends its frames at an ASCII delimiter (LF, CR, ``]``, ``,``), and an
ASCII byte can never sit inside a multi-byte UTF-8 sequence.  So a complete frame is
always decodable on its own, and decoding per complete frame gives the same answer as
an incremental decoder fed arbitrary chunks -- at a fraction of the Python overhead.
Only the unfinished tail at end of input needs the incremental decoder, to tell "the
input stopped in the middle of a character" (``truncated_utf8``) from "these bytes are
not UTF-8" (``invalid_utf8``).
"""

from __future__ import annotations

import codecs
from typing import Final, NoReturn

from tracestore.errors import WireError

#: The UTF-8 byte order mark; text framings strip one at the very start of a capture.
UTF8_BOM: Final[bytes] = b"\xef\xbb\xbf"

TRUNCATED_FRAME: Final[str] = "truncated_frame"
TRUNCATED_UTF8: Final[str] = "truncated_utf8"


def raise_invalid_utf8(raw: bytes, offset: int) -> NoReturn:
    """Raise ``invalid_utf8`` pointing at the first bad byte of ``raw`` (at ``offset``)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(
            f"invalid UTF-8 ({exc.reason}) at byte {offset + exc.start}",
            code="invalid_utf8", offset=offset + exc.start,
        ) from None
    # Callers only come here after a decode failed, so this is unreachable in practice;
    # keep a typed error rather than a bare assertion if that assumption ever breaks.
    raise WireError("invalid UTF-8", code="invalid_utf8", offset=offset)


def decode_utf8(raw: bytes, offset: int) -> str:
    """Decode one complete frame's bytes; ``offset`` is the absolute offset of ``raw[0]``."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise_invalid_utf8(raw, offset)


def tail_code(raw: bytes, offset: int) -> str:
    """Classify the unfinished bytes left at end of input.

    Returns ``truncated_utf8`` when ``raw`` stops inside a multi-byte character and
    ``truncated_frame`` otherwise; raises ``invalid_utf8`` if the bytes are not UTF-8.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(raw, final=False)
    except UnicodeDecodeError:
        raise_invalid_utf8(raw, offset)
    pending, _ = decoder.getstate()
    return TRUNCATED_UTF8 if pending else TRUNCATED_FRAME


__all__ = ["TRUNCATED_FRAME", "TRUNCATED_UTF8", "UTF8_BOM", "decode_utf8", "raise_invalid_utf8",
           "tail_code"]
