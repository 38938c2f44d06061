"""Bytes to text: UTF-8 first, then the file's declared or detected encoding (CP949 / EUC-KR are
common in Korea), refusing what looks like binary data; and the newline clean-up every reader shares."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from .._util.extras import require
from .document import ReadError

# Byte order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels whose real-world meaning is a superset codec (what browsers do, per the WHATWG encoding list):
# Korean pages labelled EUC-KR routinely use CP949's extra syllables.
SUPERSETS = {
    "euc-kr": "cp949",
    "euc_kr": "cp949",
    "euckr": "cp949",
    "ks_c_5601-1987": "cp949",
    "ksc5601": "cp949",
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "gb2312": "gb18030",
    "gbk": "gb18030",
}
# Text with more than this share of control characters (C0 and C1, but not tab, newline, vertical tab,
# form feed) is not text.
MAX_CONTROL_SHARE = 0.1
CONTROL = re.compile(r"[\x01-\x08\x0e-\x1f\x7f-\x9f]")
BINARY = "looks binary, not text"


def decode(raw: bytes, path: str | Path, declared: str | None = None) -> str:
    """`raw` as text, newlines normalised. Order: a byte order mark, strict UTF-8, the `declared`
    encoding (an HTML meta charset), then charset-normalizer's guess. NUL bytes outside UTF-16/32,
    bytes no encoding explains, or mostly control characters raise ReadError "looks binary"."""
    for bom, encoding in BOMS:
        if raw.startswith(bom):
            try:
                return _checked(raw[len(bom) :].decode(encoding), path)
            except UnicodeDecodeError as e:
                raise ReadError(
                    path, f"{BINARY} (starts with a {encoding} mark, then byte {e.start} is not valid)"
                ) from None
    if b"\x00" in raw:
        raise ReadError(path, f"{BINARY} (contains NUL bytes)")
    try:
        return _checked(raw.decode("utf-8"), path)
    except UnicodeDecodeError:
        pass
    if declared:
        try:
            return _checked(raw.decode(SUPERSETS.get(declared.lower(), declared)), path)
        except (LookupError, UnicodeDecodeError):
            pass
    best = require("charset_normalizer").from_bytes(raw).best()
    if best is None:
        raise ReadError(path, f"{BINARY} (not UTF-8, and no text encoding fits)")
    return _checked(str(best), path)


def _checked(text: str, path: str | Path) -> str:
    text = normalise(text)
    if text:
        control = len(text) - len(CONTROL.sub("", text))
        if control > MAX_CONTROL_SHARE * len(text):
            raise ReadError(path, f"{BINARY} ({control} of {len(text)} characters are control characters)")
    return text


def normalise(text: str) -> str:
    """Newlines as "\\n", no NULs, no byte order mark."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").removeprefix("\ufeff")
