"""Incremental ``text/event-stream`` decoder (WHATWG "event stream interpretation").

OpenAI, Anthropic, Gemini ``?alt=sse`` and the OpenAI-compatible providers all stream
SSE, with different habits: LF or CRLF line ends, comment keep-alives, data-only events,
``[DONE]`` sentinels.  Getting the framing exactly per spec once, here, lets the provider
layer see one ``SSEEvent`` shape whatever the provider and whatever the transport chunking.

Why it is written the way it is:

* Work is done on *whole event blocks in bulk* when the stream uses LF line ends (every
  real capture but Gemini's): ``feed`` finds the last blank line, splits everything before
  it into blocks with ``bytes.split`` (a C loop), and decodes the two shapes nearly every
  event has (``data: X`` and ``event: E`` + ``data: X``) in one step each.  The lines of a
  block still open wait in a ``bytearray`` until its blank line arrives, so an event cut
  into many small chunks is still decoded as one block.  A chunk that is exactly one whole
  event with nothing waiting (how servers flush) is decoded without touching the buffer.
* With CR or CRLF line ends every complete line is interpreted as it arrives.  Either way
  bytes are searched once and never rescanned, so cost stays linear even when the caller
  feeds one byte at a time.
* A CR at the very end of the available bytes is held back until the next byte (or
  ``close``) because it may be the first half of a CRLF; deciding early would give
  different ``length`` values for different chunkings.
* Decoding is per line (see ``utf8``), which validates every byte -- comments included --
  and lets an invalid byte be reported at its exact absolute offset.

Spec points kept deliberately: an event is dispatched only when its block had at least
one ``data`` field (``data:`` with an empty value counts and yields ``data=""``); the
event type defaults to ``"message"``; the last event ID persists across events and ids
containing NUL are ignored; ``retry`` must be ASCII digits only.  Comments are counted in
``comments`` and otherwise dropped.  At end of input an unfinished event is discarded (as
the spec says) but reported in ``truncation``.
"""

from __future__ import annotations

from tracestore.errors import WireError
from tracestore.wire.base import Decoder
from tracestore.wire.frames import Frame, SSEEvent, SSEEventDraft, Truncation
from tracestore.wire.sse_blocks import SSEInterpreter
from tracestore.wire.utf8 import TRUNCATED_FRAME, tail_code

_new = object.__new__


class SSEDecoder(SSEInterpreter):
    """Decode SSE bytes into ``SSEEvent`` frames; see the module docstring for the rules."""

    framing = "sse"

    def feed(self, chunk: bytes) -> list[Frame]:
        # The LF-only path, inline: for live-sized chunks the per-call overhead of the
        # general path costs more than decoding a 300-byte event.  Everything else (the
        # first bytes with a possible BOM, a CR anywhere, a poisoned or closed decoder)
        # takes the general path.  Errors are raised from the same interpretation code.
        # (``_lf_ok``: past the start, no CR held, not poisoned, not closed.)
        if not self._lf_ok or type(chunk) is not bytes or chunk.find(b"\r") >= 0:
            return Decoder.feed(self, chunk)
        buf = self._buf
        if not buf and self._block_start is None and chunk.endswith(b"\n\n"):
            frame = self._one(chunk)  # one whole event per chunk: a server's flush
            if frame is not None:
                return [frame]
        cut = chunk.rfind(b"\n\n") + 2
        if cut < 2:
            if not (chunk.startswith(b"\n") and buf.endswith(b"\n")):
                # No blank line ends here: keep the bytes for the block's end (bounded).
                start = self._block_start
                waiting = len(buf) + len(chunk) + (0 if start is None else self._pos - start)
                if waiting > self.max_frame_bytes:
                    return Decoder.feed(self, chunk)  # interprets the lines, then raises
                buf += chunk
                self._scan = len(buf)
                return []
            cut = 1  # the blank line straddles the boundary
        if buf:
            region = b"".join((buf, chunk[:cut]))
            buf.clear()
        else:
            region = chunk if cut == len(chunk) else chunk[:cut]
        if cut < len(chunk):
            buf += chunk[cut:]
        self._scan = len(buf)
        out: list[Frame] = []
        self._completed = out
        try:
            frame = (self._one(region) if self._block_start is None
                     and region.find(b"\n\n") == len(region) - 2 else None)
            if frame is not None:
                out.append(frame)
            elif region.find(b"\n\n\n") < 0:
                if not self._data_only(region, out):
                    self._blocks(region, b"\n", out)
            else:
                self._region(region, False, out)
            if len(buf) > self.max_frame_bytes:  # (no block is open after a blank line)
                self._check_pending(out)
        except WireError as exc:
            exc.frames = list(out)  # as Decoder.feed does
            self._error = exc
            self._lf_ok = False
            raise
        return out

    def _one(self, block: bytes) -> SSEEvent | None:
        """Decode ``block`` (LF only, ends with its blank line, starts at ``_pos`` with no
        block open) if it has one of the two common shapes; None (nothing changed) if not.
        """
        n = len(block)
        if n > self.max_frame_bytes or self.frame_count >= self.max_frames:
            return None
        try:
            if block.startswith(b"data: "):
                if block.find(b"\n", 6) != n - 2:
                    return None
                data = block[6:n - 2].decode()  # UTF-8, strict
                event = "message"
                present = False
            elif block.startswith(b"event: "):
                nl = block.find(b"\n", 7)
                if not block.startswith(b"data: ", nl + 1) or block.find(b"\n", nl + 7) != n - 2:
                    return None
                # Delimiters are ASCII, so decoding the two values validates the block.
                event = block[7:nl].decode() or "message"
                data = block[nl + 7:n - 2].decode()
                present = True
            else:
                return None
        except UnicodeDecodeError:
            return None  # the general path reports the first bad byte
        frame = _new(SSEEventDraft)  # new_sse_event inlined (see frames.py)
        frame.offset = self._pos
        frame.length = n
        frame.event = event
        frame.data = data
        frame.id = self.last_event_id
        frame.retry = None
        frame.event_field_present = present
        frame.__class__ = SSEEvent  # type: ignore[assignment]
        self.frame_count += 1
        self._pos += n
        return frame  # type: ignore[return-value]

    def _data_only(self, region: bytes, out: list[Frame]) -> bool:
        """Decode ``region`` if it is nothing but ``data: X`` one-line blocks (OpenAI Chat
        Completions and every compatible provider); False (nothing changed) if not.

        ``region`` is LF-only, ends with a blank line and has no other blank-line runs.  If
        it has exactly two LFs per block and starts with ``data: ``, then splitting between
        the blocks on ``\\n\\ndata: `` yields the values themselves: no per-block checks.
        """
        if not region.startswith(b"data: ") or self._block_start is not None:
            return False
        blocks = region.count(b"\n\n")
        if (region.count(b"\n") != blocks + blocks or len(region) > self.max_frame_bytes
                or self.frame_count + blocks > self.max_frames):
            return False
        values = region[6:-2].split(b"\n\ndata: ")
        if len(values) != blocks:
            return False
        pos = self._pos
        last_id = self.last_event_id
        frames: list[SSEEventDraft] = []  # SSEEvent by class swap (see _one)
        append = frames.append
        try:
            for value in values:
                frame = _new(SSEEventDraft)  # new_sse_event inlined (see frames.py)
                frame.offset = pos
                frame.length = size = len(value) + 8
                frame.event = "message"
                frame.data = value.decode()  # UTF-8, strict
                frame.id = last_id
                frame.retry = None
                frame.event_field_present = False
                frame.__class__ = SSEEvent  # type: ignore[assignment]
                append(frame)
                pos += size
        except UnicodeDecodeError:
            return False  # the general path reports the first bad byte
        out += frames  # type: ignore[arg-type]
        self._pos = pos
        self.frame_count += blocks
        return True

    def _feed(self, chunk: bytes) -> list[Frame]:
        """General path: interpret every complete line now, whatever the line ends."""
        self._lf_ok = False  # until this call ends well
        buf = self._buf
        data: bytes | bytearray
        if buf or self._at_start:
            buf += chunk
            if self._at_start and not self._strip_bom():
                return []
            data = buf
        else:
            data = chunk  # nothing held over: work on the caller's bytes without a copy
        n = len(data)
        scan = self._scan  # data[scan:] has not been searched for line ends yet
        lf = data.rfind(b"\n", scan)
        cr = data.rfind(b"\r", scan)
        held = n > 0 and cr == n - 1
        if held:
            # Possibly the first half of a CRLF: keep it, use the line end before it.
            lf = data.rfind(b"\n", scan, n - 1)
            cr = data.rfind(b"\r", scan, n - 1)
        end = lf if lf > cr else cr
        out: list[Frame] = self._completed
        if end >= 0:
            if data is buf:
                with memoryview(buf) as view:
                    region = view[:end + 1].tobytes()
                del buf[:end + 1]
            else:
                region = chunk[:end + 1]  # data is chunk here
                buf += chunk[end + 1:]
            self._region(region, cr >= 0, out)
        elif data is not buf:
            buf += data
        self._cr_held = held
        self._scan = len(buf) - 1 if held else len(buf)
        self._check_pending(out)
        self._lf_ok = not held
        return out

    def _check_pending(self, out: list[Frame]) -> None:
        """Bound what is still waiting: the open block's lines plus the partial line."""
        start = self._pos if self._block_start is None else self._block_start
        pending = self._pos + len(self._buf) - start
        if pending > self.max_frame_bytes:
            # Lines the LF path kept waiting are interpreted first, as an eager decoder
            # would have: a bad byte or a line over the bound there is the error to report.
            buf = self._buf
            end = buf.rfind(b"\n")  # (no CR in them; a held CR stays held)
            if end >= 0:
                region = bytes(buf[:end + 1])
                del buf[:end + 1]
                self._scan = len(buf)
                self._region(region, False, out)
            self._byte_limit(start, pending)

    def _close(self) -> list[Frame]:
        self._lf_ok = False
        out: list[Frame] = []
        buf = self._buf
        self._at_start = False
        # Complete lines still waiting (an open block, or a held CR that is a line end
        # after all) are interpreted first; what follows the last line end is partial.
        end = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        if end >= 0:
            region = bytes(buf[:end + 1])
            del buf[:end + 1]
            self._region(region, b"\r" in region, out)
        partial = bytes(buf)
        start = self._pos if self._block_start is None else self._block_start
        if partial:
            code = tail_code(partial, self._pos)
            self.truncation = Truncation(start, self._pos + len(partial) - start, code)
        elif self._fields:
            # Complete field lines but no blank line: the spec discards the event.
            self.truncation = Truncation(start, self._pos - start, TRUNCATED_FRAME)
        self._pos += len(partial)
        return out


__all__ = ["SSEDecoder"]
