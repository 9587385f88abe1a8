"""A minimal PNG reader for the browser test (no imaging library in the project):
8-bit RGB or RGBA, not interlaced, as Chromium writes screenshots."""

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel


def pixels(data: bytes) -> tuple[int, int, int, list[bytearray]]:
    """(width, height, bytes per pixel, the rows with their filters undone)."""
    assert data[:8] == SIGNATURE, "not a PNG"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in CHANNELS and not interlace, header
    bpp = CHANNELS[colour]
    stride = width * bpp
    raw = zlib.decompress(b"".join(chunks))
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride if kind else 0):  # kind 0: stored as is
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            else:
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def colours(rows: list[bytearray], bpp: int) -> dict[bytes, int]:
    """How many pixels have each colour."""
    counts: dict[bytes, int] = {}
    for row in rows:
        for i in range(0, len(row), bpp):
            px = bytes(row[i : i + bpp])
            counts[px] = counts.get(px, 0) + 1
    return counts
