"""A picture of a topic model as a file: the topic map (every document a point, coloured by topic) beside
bar charts of each topic's heaviest c-TF-IDF words. Needs matplotlib (`pip install 'munjang[plots]'`).

Korean labels need a font with Hangul glyphs; the first installed one of `KOREAN_FONTS` is put ahead
of matplotlib's default, and without one the plot is still written (Hangul then shows as boxes).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._util.atomic import atomic_write
from .._util.extras import require
from .topics import Topic, TopicModel

KOREAN_FONTS = (
    "Noto Sans CJK KR",
    "Noto Sans KR",
    "NanumGothic",
    "Malgun Gothic",
    "AppleGothic",
    "Noto Sans CJK JP",
    "Noto Serif CJK KR",
)


# Font file names that may hold one of KOREAN_FONTS (looked at when matplotlib's cached list has none).
FONT_FILE_HINTS = ("cjk", "nanum", "noto", "malgun", "gothic")


def korean_font() -> str | None:
    """The name of an installed font that draws Hangul, or None.

    matplotlib lists the system's fonts once and caches the list, so a font installed after that is
    missing from it; when the list has none of `KOREAN_FONTS`, the system's font files that may be one
    are added to it and it is read again."""
    font_manager = require("matplotlib.font_manager")
    name = _listed_korean_font(font_manager)
    if name is None:
        listed = {f.fname for f in font_manager.fontManager.ttflist}
        for path in font_manager.findSystemFonts():
            if path not in listed and any(hint in Path(path).name.lower() for hint in FONT_FILE_HINTS):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):  # a file matplotlib cannot read: not one
                    continue
        name = _listed_korean_font(font_manager)
    return name


def _listed_korean_font(font_manager: Any) -> str | None:
    installed = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in KOREAN_FONTS if name in installed), None)


def plot_topics(
    model: TopicModel,
    path: str | os.PathLike[str],
    max_topics: int = 8,
    n_words: int = 5,
    title: str | None = None,
) -> Path:
    """Write the topic map and the word bars of the `max_topics` largest topics to `path` (.png, .svg,
    .pdf: matplotlib picks the format from the suffix); returns the path.

    The figure is drawn without pyplot, so a notebook's or a GUI's own matplotlib backend is left
    as it was."""
    matplotlib = require("matplotlib")
    from matplotlib.figure import Figure

    topics = [t for t in model.topics if t.id >= 0][:max_topics]
    font = korean_font()
    families: Sequence[str] = [font, "DejaVu Sans"] if font else ["DejaVu Sans"]
    columns = 2
    bar_rows = max(1, (len(topics) + columns - 1) // columns)
    with matplotlib.rc_context({"font.family": list(families)}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Glyph.*missing.*")
        warnings.filterwarnings("ignore", message=".*findfont.*")
        figure = Figure(figsize=(16, max(6.0, 2.2 * bar_rows)))
        grid = figure.add_gridspec(bar_rows, 1 + columns, width_ratios=[2.2] + [1] * columns)
        _map(figure.add_subplot(grid[:, 0]), model, topics)
        colours = matplotlib.colormaps["tab10"]
        for k, topic in enumerate(topics):
            axis = figure.add_subplot(grid[k // columns, 1 + k % columns])
            words = topic.words[:n_words][::-1]
            axis.barh([w for w, _ in words], [s for _, s in words], color=colours(k % 10))
            axis.set_title(f"topic {topic.id} ({topic.size})", fontsize=10)
            axis.tick_params(axis="both", labelsize=9)
        if title:
            figure.suptitle(title)
        figure.tight_layout()
        target = Path(path)
        kind = target.suffix.lstrip(".") or "png"
        atomic_write(target, lambda tmp: figure.savefig(tmp, dpi=110, format=kind))
    return target


def _map(ax: Any, model: TopicModel, topics: Sequence[Topic]) -> None:
    """Every document as a point of its topic's colour (outliers grey), each shown topic's label at
    the median of its points."""
    xy = model.coordinates
    colours = require("matplotlib").colormaps["tab10"]
    shown = [t.id for t in topics]
    background = ~np.isin(model.assignments, shown)
    ax.scatter(xy[background, 0], xy[background, 1], s=4, c="#cccccc")
    for k, topic in enumerate(topics):
        rows = model.assignments == topic.id
        ax.scatter(xy[rows, 0], xy[rows, 1], s=6, color=colours(k % 10))
        ax.annotate(topic.label, np.median(xy[rows], axis=0), fontsize=9, ha="center", weight="bold")
    ax.set_title(f"topic map ({model.projection}), {len(model.assignments)} documents")
    ax.set_xticks([])
    ax.set_yticks([])
