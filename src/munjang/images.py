"""Images as model inputs: reading one from a file, bytes or a URL into a PIL image, with limits.

The rule for what is an image: a `PIL.Image.Image` or a `pathlib.Path` is an image, a `str` is always
text (a caption that happens to name a file stays a caption). A URL is fetched only when asked, with
`load_image`, under a size limit and a timeout. Every failure is an `ImageError` naming the source.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from ._util.extras import require
from .errors import ImageError

# The file types an image collection reads from a folder.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")
# Limits: bytes read from one file, URL or upload, and pixels decoded (a decompression bomb is small on disk).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 64 * 1024 * 1024
URL_TIMEOUT_S = 10.0


def is_image_input(value: Any) -> bool:
    """Whether `value` is an image input (a PIL image or a Path), as opposed to text."""
    if isinstance(value, Path):
        return True
    pil = _pil_image_module(optional=True)
    return pil is not None and isinstance(value, pil.Image)


def as_pil_image(value: Any) -> Any:
    """A PIL image for an image input: a PIL image as it is, a Path read from disk."""
    if isinstance(value, Path):
        return load_image(value)
    return value


def open_image_bytes(
    data: bytes, source: str = "image", max_bytes: int = MAX_IMAGE_BYTES, max_pixels: int = MAX_IMAGE_PIXELS
) -> Any:
    """Decode `data` into a PIL image (RGB), or raise ImageError naming `source` and the problem.
    The size is read from the header and checked against `max_pixels` before any pixel is decoded."""
    if len(data) > max_bytes:
        raise ImageError(f"{source}: {len(data)} bytes is over the {max_bytes}-byte image limit")
    if not data:
        raise ImageError(f"{source}: empty, not an image")
    pil = _pil_image_module()
    try:
        with pil.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > max_pixels:
                raise ImageError(f"{source}: {width}x{height} pixels is over the {max_pixels} limit")
            image.load()
            return image.convert("RGB")
    except ImageError:
        raise
    except pil.UnidentifiedImageError:
        raise ImageError(f"{source}: not a readable image (unknown format)") from None
    except (OSError, ValueError, SyntaxError, pil.DecompressionBombError) as e:
        raise ImageError(f"{source}: not a readable image ({_without_addresses(e)})") from e


def _without_addresses(error: BaseException) -> str:
    """An error's text without object reprs (`<_io.BytesIO object at 0x7f…>`): no heap address
    reaches a client."""
    return re.sub(r"<[^<>]* at 0x[0-9a-fA-F]+>", "the data", str(error))


def load_image(
    source: str | Path | bytes, *, max_bytes: int = MAX_IMAGE_BYTES, timeout: float = URL_TIMEOUT_S
) -> Any:
    """A PIL image (RGB) from a file path, raw bytes, or an http(s) URL (fetched with `timeout`
    seconds and at most `max_bytes` bytes)."""
    if isinstance(source, bytes):
        return open_image_bytes(source, max_bytes=max_bytes)
    text = str(source)
    if isinstance(source, str) and text.startswith(("http://", "https://")):
        return open_image_bytes(_fetch(text, max_bytes, timeout), text, max_bytes)
    path = Path(source)
    if not path.is_file():
        raise ImageError(f"{path}: no such image file")
    size = path.stat().st_size
    if size > max_bytes:
        raise ImageError(f"{path}: {size} bytes is over the {max_bytes}-byte image limit")
    return open_image_bytes(path.read_bytes(), str(path), max_bytes)


def _fetch(url: str, max_bytes: int, timeout: float) -> bytes:
    """The body of `url`, read with a timeout and stopped past `max_bytes`."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data: bytes = response.read(max_bytes + 1)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ImageError(f"{url}: download failed ({e})") from e
    if len(data) > max_bytes:
        raise ImageError(f"{url}: over the {max_bytes}-byte image limit")
    return data


def _pil_image_module(optional: bool = False) -> Any:
    if optional:
        try:
            from PIL import Image
        except ImportError:
            return None
        return Image
    return require("PIL.Image")
