"""AWS event-stream framing (application/vnd.amazon.eventstream), decoded with the stdlib.

One message on the wire, all integers big-endian:

    total length (4) | headers length (4) | prelude CRC32 (4)        the 12-byte prelude
    headers: name length (1) | name | type (1) | value ...           `headers length` bytes
    payload                                                          the rest
    message CRC32 (4)                                                of every byte before it

Header value types: 0 true, 1 false, 2 byte, 3 short, 4 int, 5 long, 6 bytes (2-byte length),
7 string (2-byte length), 8 timestamp (ms, 8), 9 uuid (16). Bedrock's response stream sends
`:message-type` event (`:event-type` chunk, payload `{"bytes": base64 of one Messages stream
event}`), exception (`:exception-type`, payload `{"message"}`) or error (`:error-code`,
`:error-message`). Bytes arrive split anywhere; a bad CRC or length is a FramingError.
"""

import struct
import zlib

PRELUDE = 12
MIN_MESSAGE = PRELUDE + 4
MAX_MESSAGE = 24 * 1024 * 1024   # botocore's limit for one message
MAX_HEADERS = 128 * 1024
_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


class FramingError(Exception):
    """The bytes are not a well-formed event-stream message (length, CRC or header)."""


class EventStreamDecoder:
    """Bytes in any pieces -> complete messages, each (headers dict, payload bytes)."""

    def __init__(self):
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list:
        """The messages `chunk` completes; FramingError when one is broken."""
        self._buffer += chunk
        messages = []
        while len(self._buffer) >= PRELUDE:
            total, headers_length, prelude_crc = struct.unpack_from(">III", self._buffer)
            if zlib.crc32(self._buffer[:8]) != prelude_crc:
                raise FramingError("event-stream prelude CRC mismatch (the stream is corrupt)")
            if not MIN_MESSAGE <= total <= MAX_MESSAGE or headers_length > MAX_HEADERS \
                    or PRELUDE + headers_length + 4 > total:
                raise FramingError(f"event-stream message of impossible length {total}"
                                   f" (headers {headers_length})")
            if len(self._buffer) < total:
                break
            frame = bytes(self._buffer[:total])
            del self._buffer[:total]
            (message_crc,) = struct.unpack_from(">I", frame, total - 4)
            if zlib.crc32(frame[:-4]) != message_crc:
                raise FramingError("event-stream message CRC mismatch (the stream is corrupt)")
            headers = parse_headers(frame[PRELUDE:PRELUDE + headers_length])
            messages.append((headers, frame[PRELUDE + headers_length:-4]))
        return messages

    @property
    def pending(self) -> int:
        """Bytes of a message not yet complete (a stream that ends here was cut)."""
        return len(self._buffer)


def parse_headers(data: bytes) -> dict:
    """The header block of one message as {name: value}."""
    headers, at = {}, 0
    try:
        while at < len(data):
            size = data[at]
            name = data[at + 1:at + 1 + size].decode("utf-8")
            kind, at = data[at + 1 + size], at + 2 + size
            if kind in (0, 1):
                value = kind == 0
            elif kind in _FIXED:
                (value,) = struct.unpack_from(_FIXED[kind], data, at)
                at += struct.calcsize(_FIXED[kind])
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", data, at)
                raw = data[at + 2:at + 2 + length]
                if len(raw) != length:
                    raise IndexError("header value runs past the block")
                value, at = (raw.decode("utf-8") if kind == 7 else raw), at + 2 + length
            elif kind == 9:
                value, at = data[at:at + 16], at + 16
                if len(value) != 16:
                    raise IndexError("uuid runs past the block")
            else:
                raise FramingError(f"event-stream header {name!r} has unknown type {kind}")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise FramingError(f"event-stream headers are malformed ({exc})") from None
    return headers


def encode_message(headers: dict, payload: bytes) -> bytes:
    """One message with string (or bool) headers: what a server sends (the test fakes use it)."""
    block = b""
    for name, value in headers.items():
        raw = name.encode("utf-8")
        if isinstance(value, bool):
            block += bytes([len(raw)]) + raw + bytes([0 if value else 1])
        else:
            text = str(value).encode("utf-8")
            block += bytes([len(raw)]) + raw + b"\x07" + struct.pack(">H", len(text)) + text
    total = PRELUDE + len(block) + len(payload) + 4
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + block + payload
    return body + struct.pack(">I", zlib.crc32(body))
