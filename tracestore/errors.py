"""The tracestore error hierarchy.

Every error a user can cause carries a stable machine ``code`` (scripts match on it) and a
human sentence (people read it).  The CLI maps the class to an exit code and never prints a
traceback for these.  Driver and library errors are translated into this hierarchy at one
boundary each (``raise ... from exc``), so callers only ever catch ``TracestoreError``.

    TracestoreError
    ├── InputError            bad input: files, JSON, shapes, labels, scenario steps
    │   └── WireError         bytes that do not decode: framing, UTF-8, CRC, bounds
    ├── StoreError            the database refused or is not ours
    │   ├── ExpectedVersionConflict
    │   └── ChainBroken
    ├── NotFound              an attempt, trace or template that does not exist
    └── ReviewError           a review action the record refuses

Every code is registered, with its sentence and exit code, in ``tracestore.error_codes``
(docs/errors.md is generated from it; tests/test_error_codes.py finds unregistered ones).
"""

from __future__ import annotations

from typing import Any


class TracestoreError(Exception):
    """Base class: a stable ``code``, a sentence, and optional structured context."""

    code: str = "tracestore_error"
    exit_code: int = 1

    def __init__(self, message: str, *, code: str | None = None, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.context = context

    @property
    def aliases(self) -> tuple[str, ...]:
        """Old names of this code, still written in JSON errors for one release."""
        from tracestore.error_codes import aliases_of

        return aliases_of(self.code)

    def to_dict(self) -> dict[str, Any]:
        doc = {"error": self.code, "message": self.message, **self.context}
        if self.aliases:  # e.g. attempt_not_found was also unknown_attempt and not_found
            doc["aliases"] = list(self.aliases)
        return doc

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InputError(TracestoreError):
    """The input given to tracestore (file, JSON, scenario, option) is not acceptable."""

    code = "invalid_input"
    exit_code = 2


class WireError(InputError):
    """Bytes that cannot be decoded as the expected framing.

    ``offset`` is the absolute byte offset in the capture where the problem was found.
    """

    code = "wire_error"

    def __init__(self, message: str, *, code: str | None = None, offset: int | None = None,
                 **context: Any) -> None:
        super().__init__(message, code=code, offset=offset, **context)
        self.offset = offset
        #: Frames a decoder completed earlier in the call that failed (see
        #: ``tracestore.wire.base.Decoder.feed``): evidence before the fault is not lost.
        self.frames: list[Any] = []


class StoreError(TracestoreError):
    """The event store refused an operation, or the database is not a tracestore database."""

    code = "store_error"
    exit_code = 3


class ExpectedVersionConflict(StoreError):
    """An append carried a stale expected stream version (someone else appended first)."""

    code = "expected_version_conflict"


class ChainBroken(StoreError):
    """The hash chain does not verify; ``position`` names the first broken event."""

    code = "chain_broken"

    def __init__(self, message: str, *, position: int, **context: Any) -> None:
        super().__init__(message, position=position, **context)
        self.position = position


class NotFound(TracestoreError):
    """A named attempt, trace, template or field does not exist."""

    # Every raise names what was not found; the default is the commonest (the generic
    # ``not_found`` of old is an alias of it now).
    code = "attempt_not_found"
    exit_code = 4


class ReviewError(TracestoreError):
    """A review action that the record refuses (for example a non-independent approval)."""

    code = "review_refused"
    exit_code = 5


# -- reviews --------------------------------------------------------------------------------

class ReviewSignatureInvalid(StoreError):
    """``verify``: a review event's signature does not hold; ``position`` names the first."""

    code = "review_signature_invalid"

    def __init__(self, message: str, *, position: int, **context: Any) -> None:
        super().__init__(message, position=position, **context)
        self.position = position


# the per-response handle and turn scopes of live recording.
class RecordingScopeError(InputError):
    """A turn scope or attempt handle used in a way that would make the trace ambiguous:
    ``ambiguous_turn`` (nested turn scopes, a turn and a transport naming other traces),
    ``foreign_attempt`` (a handle of another recorder or store), ``not_recorded`` (an
    object no recording transport produced).  Nothing is written."""

    code = "recording_scope"


# a recording call on an attempt (or through a recorder) that has ended.
class AttemptClosedError(InputError):
    """A recording call the attempt can no longer take: ``attempt_closed`` (a feed, Stop or
    drain after the attempt drained: its bytes and its ending are final) or
    ``recorder_closed`` (any recording call through a ``Recorder`` that was closed, or an
    attempt handle of one).  Raised before anything is appended: nothing is written.  A
    destination write or readback after the drain is not this error — an answer is written
    to its destinations after it is released."""

    code = "attempt_closed"
