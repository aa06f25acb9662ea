"""A chunked HTTP/1.1 body's framing, found without touching the bytes between (the proxy's
raw path forwards the upstream's chunks as they came; ``network.py``)."""

from __future__ import annotations

import httpx

#: The longest chunk-size line (with extensions) accepted.
MAX_LINE = 4096



class ChunkScanner:
    """Where a chunked body's framing is, chunk by chunk (the bytes in between are skipped,
    never looked at): how many body bytes a read holds, how far it may be forwarded as it
    came, where the terminal chunk starts.  ``decode`` gives the body bytes themselves."""

    def __init__(self) -> None:
        self.data_left = 0
        "Body bytes of the current chunk still to come."
        self.crlf_left = 0
        "Bytes of the CRLF closing the current chunk's data still to come."
        self.done = False
        "The terminal (zero-size) chunk was reached."
        self.terminal_end = 0
        "Where the terminal chunk's size line ends in the data that reached it."
        self._held = b""

    def scan(self, data: bytes, pos: int = 0, out: list[bytes] | None = None) -> tuple[int, int]:
        """Scan ``data[pos:]``: ``(body bytes, end)``; ``data[pos:end]`` is whole chunk
        framing and data (a size line not complete at the end, and the terminal chunk, are
        not in it).  Body pieces are appended to ``out`` when given."""
        n, body = len(data), 0
        while pos < n:
            if self.data_left:
                take = min(self.data_left, n - pos)
                if out is not None:
                    out.append(data[pos:pos + take])
                self.data_left -= take
                body += take
                pos += take
                continue
            if self.crlf_left:
                byte = data[pos]
                if byte == 0x0A:  # the LF ends it (a bare LF is accepted, as llhttp does)
                    self.crlf_left = 0
                elif byte == 0x0D and self.crlf_left == 2:
                    self.crlf_left = 1
                else:
                    raise httpx.RemoteProtocolError("the upstream's chunk data is not "
                                                    "followed by CRLF")
                pos += 1
                continue
            nl = data.find(b"\n", pos, pos + MAX_LINE)
            if nl < 0:
                if n - pos >= MAX_LINE:
                    raise httpx.RemoteProtocolError("the upstream sent a chunk size line "
                                                    f"over {MAX_LINE} bytes")
                return body, pos
            size = _chunk_size(data[pos:nl])
            if size == 0:
                self.done, self.terminal_end = True, nl + 1
                return body, pos
            self.data_left, self.crlf_left = size, 2
            pos = nl + 1
        return body, n

    def decode(self, data: bytes) -> bytes:
        """The body bytes in ``data`` (the framing that follows what came before; what
        follows the terminal chunk is not body)."""
        if self.done:
            return b""
        if self._held:
            data, self._held = self._held + data, b""
        out: list[bytes] = []
        _, end = self.scan(data, 0, out)
        if end < len(data) and not self.done:
            self._held = data[end:]
        return out[0] if len(out) == 1 else b"".join(out)


def _chunk_size(line: bytes) -> int:
    size = line.split(b";", 1)[0].strip(b" \t\r")
    if not size or len(size) > 16 or size.strip(b"0123456789abcdefABCDEF"):
        raise httpx.RemoteProtocolError(f"the upstream sent a bad chunk size {line[:40]!r}")
    return int(size, 16)

