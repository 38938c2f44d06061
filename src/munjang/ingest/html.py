"""HTML to text with BeautifulSoup (the standard library's parser): no scripts, styles or templates;
whitespace collapsed as a browser would; block elements and <br> become line breaks, so sentences in
neighbouring paragraphs, list items or cells do not run together."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .._util.extras import require
from .decode import decode

DROPPED = ("script", "style", "noscript", "template", "svg", "math", "iframe", "object", "title")
BLOCKS = (
    "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
    "h6", "header", "hgroup", "hr", "html", "legend", "li", "main", "nav", "ol", "option", "p", "pre",
    "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
)  # fmt: skip
SPACES = re.compile(r"[ \t\n\f\r\v]+")
AROUND_NEWLINE = re.compile(r"[ \t]*\n[ \t]*")
BLANK_LINES = re.compile(r"\n{3,}")


def read_html(raw: bytes, path: str | Path) -> tuple[str, str | None]:
    """(the page's text, its <title> or first <h1>)."""
    bs4 = require("bs4")
    declared = bs4.dammit.EncodingDetector.find_declared_encoding(raw, is_html=True)
    soup = bs4.BeautifulSoup(decode(raw, path, declared=declared), "html.parser")
    title = _text_of(soup.title) or _text_of(soup.find("h1"))
    for tag in soup.find_all(DROPPED):
        tag.decompose()
    for node in soup.find_all(string=True):
        if type(node) is not bs4.element.NavigableString:  # comments, doctype, CDATA, processing instructions
            node.extract()
        elif node.find_parent("pre") is None:
            node.replace_with(SPACES.sub(" ", str(node)))
    for tag in soup.find_all("br"):
        tag.replace_with("\n")
    for tag in soup.find_all(BLOCKS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    text = AROUND_NEWLINE.sub("\n", soup.get_text())
    return BLANK_LINES.sub("\n\n", text).strip(), title


def _text_of(tag: Any) -> str | None:
    if tag is None:
        return None
    return SPACES.sub(" ", tag.get_text()).strip() or None
