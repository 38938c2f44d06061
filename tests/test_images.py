"""Reading images: files, bytes and URLs into PIL images, under size limits, with errors that name
the source; what counts as an image input (PIL, Path) and what stays text (str)."""

from __future__ import annotations

import http.server
import io
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from munjang.errors import ImageError
from munjang.images import is_image_input, load_image, open_image_bytes
from tests.helpers.tiny_clip import random_image


def _png_bytes() -> bytes:
    buffer = io.BytesIO()
    random_image(7, size=(20, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("served")
    (folder / "pic.png").write_bytes(_png_bytes())
    (folder / "notes.txt").write_text("not an image")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_files_bytes_and_urls_give_the_same_rgb_image(tmp_path: Path, server: str) -> None:
    data = _png_bytes()
    (tmp_path / "a.png").write_bytes(data)
    images = [load_image(tmp_path / "a.png"), load_image(str(tmp_path / "a.png")), load_image(data),
              load_image(f"{server}/pic.png")]  # fmt: skip
    for image in images:
        assert image.mode == "RGB" and image.size == (20, 10)
        assert image.tobytes() == images[0].tobytes()


def test_limits_and_bad_sources_name_the_problem(tmp_path: Path, server: str) -> None:
    data = _png_bytes()
    with pytest.raises(ImageError, match="byte image limit"):
        load_image(data, max_bytes=len(data) - 1)
    with pytest.raises(ImageError, match="byte image limit"):
        load_image(f"{server}/pic.png", max_bytes=len(data) - 1)
    with pytest.raises(ImageError, match="not a readable image"):
        open_image_bytes(b"GIF89a but not really", "upload")
    with pytest.raises(ImageError, match="not a readable image"):
        load_image(f"{server}/notes.txt")
    with pytest.raises(ImageError, match="download failed"):
        load_image(f"{server}/missing.png")
    with pytest.raises(ImageError, match="no such image file"):
        load_image(tmp_path / "missing.png")
    with pytest.raises(ImageError, match="empty"):
        open_image_bytes(b"")


def test_only_pil_images_and_paths_are_image_inputs(tmp_path: Path) -> None:
    assert is_image_input(random_image(0)) and is_image_input(tmp_path / "x.png")
    assert not is_image_input(str(tmp_path / "x.png")) and not is_image_input(b"bytes")
