"""munjang.ingest: plain text (UTF-8 and Korean legacy encodings), Markdown, HTML and PDF files read into
documents, and every way a file can fail to be one."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

from munjang.errors import MunjangError
from munjang.ingest import SUFFIXES, ReadError, SourceDocument, find_files, read_file
from tests.helpers.files import KOREAN, blank_pdf, encrypted_pdf, text_pdf, write


# -- plain text ------------------------------------------------------------------------------------
def test_utf8_text_with_crlf_and_bom(tmp_path: Path) -> None:
    path = write(tmp_path / "notes" / "a.txt", "\ufeffFirst line.\r\nSecond line.\rThird.\n")
    doc = read_file(path, root=tmp_path)
    assert isinstance(doc, SourceDocument)
    assert doc.id == "notes/a.txt"
    assert doc.text == "First line.\nSecond line.\nThird.\n"
    assert doc.title is None
    assert doc.metadata == {"path": path.as_posix(), "format": "text", "bytes": path.stat().st_size}


@pytest.mark.parametrize("encoding", ["cp949", "euc-kr"])
def test_korean_legacy_encodings(tmp_path: Path, encoding: str) -> None:
    raw = KOREAN.encode(encoding)
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    doc = read_file(write(tmp_path / "korean.txt", raw))
    assert doc.text == KOREAN and doc.id == "korean.txt"


def test_cp949_only_syllables(tmp_path: Path) -> None:
    """똠 and 햏 are outside EUC-KR's 2,350 syllables; CP949 (Windows' Korean code page) has them."""
    text = "똠방각하가 햏 하고 웃었다. 오늘도 서울은 맑음.\n"
    doc = read_file(write(tmp_path / "cp949.txt", text.encode("cp949")))
    assert doc.text == text


def test_utf16_with_bom(tmp_path: Path) -> None:
    doc = read_file(write(tmp_path / "u16.txt", "\ufeff안녕하세요\r\n".encode("utf-16-le")))
    assert doc.text == "안녕하세요\n"


@pytest.mark.parametrize(
    "data",
    [
        bytes(range(256)) * 8,  # NUL bytes
        bytes(b % 255 + 1 for b in range(4096)),  # every byte but NUL: no text encoding fits
        b"\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f ok",  # valid UTF-8, mostly control characters
    ],
    ids=["nul", "undecodable", "control"],
)
def test_binary_junk(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path / "junk.txt", data)
    with pytest.raises(ReadError, match="looks binary, not text") as caught:
        read_file(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("data", [b"", b"  \n\t\r\n"], ids=["empty", "whitespace"])
def test_no_text(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(ReadError, match="no text"):
        read_file(write(tmp_path / "empty.txt", data))


def test_size_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "big.md", "word " * 1000)
    assert read_file(path, max_bytes=5000).text.startswith("word")
    with pytest.raises(ReadError, match="over the 4000 bytes limit"):
        read_file(path, max_bytes=4000)


def test_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="no such file"):
        read_file(tmp_path / "missing.txt")
    with pytest.raises(ReadError, match=r"unsupported file type '\.odt'"):
        read_file(write(tmp_path / "a.odt", "x"))
    error = ReadError(tmp_path / "x.pdf", "broken")
    assert isinstance(error, MunjangError)
    assert (error.path, error.reason, str(error)) == (
        str(tmp_path / "x.pdf"),
        "broken",
        f"{error.path}: broken",
    )
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


# -- markdown --------------------------------------------------------------------------------------
def test_markdown_title_is_the_first_heading_outside_code(tmp_path: Path) -> None:
    text = "Intro line.\n\n```bash\n# not a heading\n```\n\n# 서울 안내 #\n\n## Sub\n\nBody **bold**.\n"
    doc = read_file(write(tmp_path / "guide.md", text))
    assert doc.title == "서울 안내"
    assert doc.text == text  # markdown is kept as written
    assert doc.metadata["format"] == "markdown"


def test_markdown_front_matter(tmp_path: Path) -> None:
    doc = read_file(
        write(tmp_path / "post.markdown", "---\ntitle: From front matter\ndate: 2024-01-02\n---\n# H\nText\n")
    )
    assert doc.title == "From front matter"
    assert doc.text == "# H\nText\n"
    # a leading thematic break is not front matter
    doc = read_file(write(tmp_path / "rule.md", "---\n\nJust text after a rule.\n"))
    assert doc.title is None and doc.text.startswith("---")


# -- html ------------------------------------------------------------------------------------------
PAGE = """<!doctype html>
<html><head>
  <meta charset="utf-8"><title>  The   page title </title>
  <style>p { color: red }</style>
  <script>var secret = "do not index";</script>
</head>
<body>
  <!-- a comment -->
  <noscript>enable javascript</noscript>
  <template><p>template text</p></template>
  <h1>Heading</h1>
  <p>First sentence of a paragraph
     that wraps in the source.</p><p>Second paragraph with <b>bold</b> and <a href="#">a link</a>.</p>
  <ul><li>one</li><li>two</li></ul>
  <div>left</div><div>right</div>
  line<br>break
  <table><tr><td>cell1</td><td>cell2</td></tr></table>
</body></html>
"""


def test_html_text(tmp_path: Path) -> None:
    doc = read_file(write(tmp_path / "page.html", PAGE))
    assert doc.title == "The page title"
    assert doc.metadata["format"] == "html"
    for dropped in ("do not index", "color", "enable javascript", "template text", "a comment", "page title"):
        assert dropped not in doc.text
    lines = doc.text.split("\n")
    assert "First sentence of a paragraph that wraps in the source." in lines
    assert "Second paragraph with bold and a link." in lines
    for line in ("Heading", "one", "two", "left", "right", "line", "break", "cell1", "cell2"):
        assert line in lines, line
    assert "\n\n\n" not in doc.text and doc.text == doc.text.strip()


def test_html_title_falls_back_to_h1(tmp_path: Path) -> None:
    doc = read_file(write(tmp_path / "x.htm", "<body><h1> Main   heading </h1><p>Text.</p></body>"))
    assert doc.title == "Main heading" and doc.text == "Main heading\n\nText."


def test_html_declared_euc_kr(tmp_path: Path) -> None:
    """A Korean page labelled EUC-KR (as older sites are) that uses CP949-only syllables."""
    page = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=euc-kr">'
    page += "<title>뉴스</title></head><body><p>똠방각하, 서울에서.</p></body></html>"
    doc = read_file(write(tmp_path / "kr.html", page.encode("cp949")))
    assert doc.title == "뉴스" and doc.text == "똠방각하, 서울에서."


def test_html_without_text(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="no text"):
        read_file(write(tmp_path / "empty.html", "<html><script>x()</script><body> </body></html>"))


# -- pdf -------------------------------------------------------------------------------------------
def test_pdf_pages_and_title(tmp_path: Path) -> None:
    pages = ["Seoul is the capital of Korea.\nThe Han river flows through it.", "The second page."]
    path = write(tmp_path / "docs" / "report.PDF", text_pdf(pages, title="Annual report"))
    doc = read_file(path, root=tmp_path)
    assert doc.id == "docs/report.PDF"
    assert doc.title == "Annual report"
    assert doc.text == "\n\n".join(pages)
    meta = doc.metadata
    assert (meta["format"], meta["pages"], meta["bytes"]) == ("pdf", 2, path.stat().st_size)
    assert [doc.text[s:].split("\n")[0] for s in meta["page_starts"]] == [
        "Seoul is the capital of Korea.",
        "The second page.",
    ]


def test_pdf_without_title_metadata(tmp_path: Path) -> None:
    assert read_file(write(tmp_path / "t.pdf", text_pdf(["Only text."]))).title is None


def test_pdf_without_text_layer(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match=r"no text layer \(scanned or image-only PDF\); run OCR first"):
        read_file(write(tmp_path / "scan.pdf", blank_pdf()))


def test_pdf_encrypted(tmp_path: Path) -> None:
    # encrypted only against editing (empty user password): readable
    assert read_file(write(tmp_path / "open.pdf", encrypted_pdf(""))).text == "Locked text."
    with pytest.raises(ReadError, match="encrypted PDF that needs a password"):
        read_file(write(tmp_path / "locked.pdf", encrypted_pdf("secret")))


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.7\n" + bytes(range(256)) * 4,
        text_pdf(["Cut short."])[:300],
    ],
    ids=["garbage", "truncated"],
)
def test_pdf_corrupt(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path / "bad.pdf", data)
    with pytest.raises(ReadError, match="cannot read the PDF") as caught:
        read_file(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_not_a_pdf(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="not a PDF"):
        read_file(write(tmp_path / "fake.pdf", "hello"))


# -- finding files ---------------------------------------------------------------------------------
def test_find_files(tmp_path: Path) -> None:
    for name in ("b.md", "a.txt", "sub/c.html", "sub/deeper/d.pdf", "sub/E.HTM", "skip.odt", ".hidden.md"):
        write(tmp_path / "docs" / name, "x")
    write(tmp_path / "docs" / ".git" / "x.md", "x")
    write(tmp_path / "other.md", "x")
    docs = tmp_path / "docs"
    found = list(find_files([docs, tmp_path / "other.md", docs / "b.md"]))
    assert [(f.relative_to(r).as_posix(), r) for f, r in found] == [
        ("a.txt", docs),
        ("b.md", docs),
        ("sub/E.HTM", docs),
        ("sub/c.html", docs),
        ("sub/deeper/d.pdf", docs),
        ("other.md", tmp_path),  # docs/b.md again is not repeated
    ]
    assert [f.name for f, _ in find_files([docs], recursive=False)] == ["a.txt", "b.md"]
    assert found == list(find_files([docs, tmp_path / "other.md"]))  # deterministic


def test_find_files_errors(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "x")
    bad = write(tmp_path / "data.jsonl", "{}")
    with pytest.raises(ReadError, match=r"unsupported file type '\.jsonl'; supported: \.txt, \.md"):
        list(find_files([bad]))
    with pytest.raises(ReadError, match="no such file or folder"):
        list(find_files([tmp_path / "nope"]))
    errors: list[ReadError] = []
    found = list(find_files([bad, tmp_path / "nope", tmp_path / "a.md"], on_error=errors.append))
    assert [f.name for f, _ in found] == ["a.md"] and len(errors) == 2


def test_suffixes() -> None:
    assert SUFFIXES == {
        ".txt": "text",
        ".md": "markdown",
        ".markdown": "markdown",
        ".html": "html",
        ".htm": "html",
        ".pdf": "pdf",
        ".hwp": "hwp",
        ".hwpx": "hwpx",
        ".docx": "docx",
        ".pptx": "pptx",
        ".xlsx": "xlsx",
    }


def test_missing_extra_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from munjang.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(
        MissingExtraError, match=r"reading PDF files needs pypdf: pip install 'munjang\[files\]'"
    ):
        read_file(write(tmp_path / "a.pdf", text_pdf(["x"])))
