"""The topic plot: a real image file, a Hangul font when one is installed, one clear error without
matplotlib."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from munjang.applications import find_topics
from munjang.applications.topic_plot import KOREAN_FONTS, korean_font, plot_topics
from munjang.errors import MissingExtraError
from tests.applications.test_topics import themed

pytest.importorskip("matplotlib")


def test_writes_a_png(tmp_path) -> None:
    docs, vectors, _ = themed(10)
    model = find_topics(None, docs, min_topic_size=5, reduction="none", embeddings=vectors)
    path = plot_topics(model, tmp_path / "topics.png", title="테스트")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically


def has_cjk_font() -> bool:
    if shutil.which("fc-list") is None:
        return False
    listing = subprocess.run(["fc-list"], capture_output=True, text=True, check=False).stdout
    return any(name in listing for name in ("CJK KR", "Noto Sans KR", "NanumGothic"))


@pytest.mark.skipif(not has_cjk_font(), reason="no font with Hangul is installed")
def test_a_hangul_font_installed_after_matplotlib_listed_its_fonts_is_found(monkeypatch) -> None:
    from matplotlib import font_manager

    listed = font_manager.fontManager.ttflist
    korean_files = {f.fname for f in listed if f.name in KOREAN_FONTS}
    without = [f for f in listed if f.fname not in korean_files]  # the list cached before the install
    monkeypatch.setattr(font_manager.fontManager, "ttflist", without)
    assert korean_font() in KOREAN_FONTS


@pytest.mark.skipif(not has_cjk_font(), reason="no font with Hangul is installed")
def test_a_hangul_font_is_chosen() -> None:
    from matplotlib import font_manager

    name = korean_font()
    assert name is not None
    path = font_manager.findfont(font_manager.FontProperties(family=name), fallback_to_default=False)
    from matplotlib.ft2font import FT2Font

    assert FT2Font(path).get_char_index(ord("한")) != 0  # the font really has the glyph


def test_missing_matplotlib_is_one_clear_error(tmp_path, monkeypatch) -> None:
    docs, vectors, _ = themed(4)
    model = find_topics(None, docs, min_topic_size=3, reduction="none", embeddings=vectors)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=r"munjang\[plots\]"):
        plot_topics(model, tmp_path / "x.png")
