"""`munjang index add` with document files and folders: one document per file, a per-file error line
for each unreadable file, resumable re-runs, batches kept across an interrupt."""

from __future__ import annotations

from pathlib import Path

import pytest

from munjang.search.collection.collection import Collection
from tests.helpers.cli import run_cli
from tests.helpers.files import KOREAN, blank_pdf, text_pdf, write

GOOD = {
    "guide.md": "# 서울 안내\n\n서울은 대한민국의 수도이다. 한강이 도시를 가로질러 흐른다.\n",
    "page.html": "<html><head><title>Guitar</title><script>x()</script></head>"
    "<body><p>A man is playing the guitar.</p><p>He sings.</p></body></html>",
    "sub/korean.txt": KOREAN.encode("cp949"),
    "sub/report.pdf": text_pdf(["The stock market fell sharply today.", "Page two."], title="Markets"),
}
BAD = {
    "scan.pdf": (blank_pdf(), "no text layer"),
    "sub/junk.txt": (bytes(range(256)) * 4, "looks binary, not text"),
    "empty.md": (b"", "no text"),
    "broken.pdf": (b"%PDF-1.7\n" + bytes(range(256)), "cannot read the PDF"),
}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    for name, data in GOOD.items():
        write(folder / name, data)
    for name, (data, _) in BAD.items():
        write(folder / name, data)
    write(folder / "notes.odt", b"ignored in a folder: not a supported type")
    return folder


@pytest.fixture
def col(tmp_path: Path, capsys, monkeypatch) -> str:
    folder = str(tmp_path / "col")
    assert run_cli(["index", "create", folder], capsys, monkeypatch)[0] == 0
    return folder


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.strip()]


def stored(folder: str) -> dict[str, tuple[str, dict]]:
    with Collection.open(Path(folder), readonly=True) as c:
        ids = list(c.ids())
        return {d.id: (d.text, d.metadata) for d in c.get(ids) if d is not None}


def test_add_a_folder(col: str, docs: Path, capsys, monkeypatch) -> None:
    code, out, err = run_cli(["index", "add", col, str(docs)], capsys, monkeypatch)
    assert code == 1
    assert "added 4, updated 0, skipped 0, failed 4;" in out and "4 documents" in out
    lines = error_lines(err)
    assert len(lines) == len(BAD)
    for name, (_, reason) in BAD.items():
        assert sum(line.startswith(f"error: {docs / name}: {reason}") for line in lines) == 1, (name, lines)
    docs_in = stored(col)
    assert sorted(docs_in) == sorted(GOOD)
    text, meta = docs_in["sub/report.pdf"]
    assert text == "The stock market fell sharply today.\n\nPage two."
    assert meta["title"] == "Markets" and meta["format"] == "pdf" and meta["pages"] == 2
    assert meta["page_starts"] == [0, len("The stock market fell sharply today.\n\n")]
    assert meta["path"] == (docs / "sub/report.pdf").as_posix()
    assert docs_in["sub/korean.txt"][0] == KOREAN and "title" not in docs_in["sub/korean.txt"][1]
    assert docs_in["guide.md"][1]["title"] == "서울 안내"
    assert docs_in["page.html"] == (
        "A man is playing the guitar.\n\nHe sings.",
        {
            "path": (docs / "page.html").as_posix(),
            "format": "html",
            "bytes": len(GOOD["page.html"]),
            "title": "Guitar",
        },
    )
    code, out, _ = run_cli(
        ["index", "search", col, "-q", "stock prices dropped", "-k", "1"], capsys, monkeypatch
    )
    assert code == 0 and "[sub/report.pdf]" in out


def test_rerun_resumes_and_keeps_what_is_stored(col: str, docs: Path, capsys, monkeypatch) -> None:
    assert run_cli(["index", "add", col, str(docs)], capsys, monkeypatch)[0] == 1
    before = stored(col)
    # a stored file that changed is not read again without --upsert
    write(docs / "guide.md", "# Changed\n\nNew text.\n")
    code, out, err = run_cli(["index", "add", col, str(docs)], capsys, monkeypatch)
    assert code == 1 and "added 0, updated 0, skipped 4, failed 4;" in out
    assert len(error_lines(err)) == len(BAD)
    assert stored(col) == before
    # fixing the bad files: only they are added, and the exit status is 0
    for name in BAD:
        write(docs / name, text_pdf(["Fixed."]) if name.endswith(".pdf") else "Fixed text.")
    code, out, err = run_cli(["index", "add", col, str(docs)], capsys, monkeypatch)
    assert code == 0 and "added 4, updated 0, skipped 4, failed 0;" in out and err == ""
    assert len(stored(col)) == 8
    code, out, _ = run_cli(["index", "add", col, str(docs / "guide.md"), "--upsert"], capsys, monkeypatch)
    assert code == 0 and "updated 1" in out
    assert stored(col)["guide.md"][0] == "# Changed\n\nNew text.\n"


def test_interrupt_keeps_finished_batches(col: str, docs: Path, capsys, monkeypatch) -> None:
    import munjang.ingest

    read_file = munjang.ingest.read_file
    seen: list[Path] = []

    def interrupted(path: Path, *args, **kwargs):
        seen.append(path)
        if len(seen) == 6:
            raise KeyboardInterrupt
        return read_file(path, *args, **kwargs)

    monkeypatch.setattr(munjang.ingest, "read_file", interrupted)
    code, out, err = run_cli(["index", "add", col, str(docs), "--commit-every", "2"], capsys, monkeypatch)
    assert code == 130 and "added 2, updated 0, skipped 0, failed 3 before stopping;" in out
    lines = error_lines(err)
    assert len(lines) == 4 and lines[-1].startswith("stopped: 2 documents are stored")
    assert "run the same command again to resume" in lines[-1]
    # files in order: broken.pdf, empty.md, guide.md, page.html, scan.pdf, (interrupted) ...
    assert sorted(stored(col)) == ["guide.md", "page.html"]
    monkeypatch.setattr(munjang.ingest, "read_file", read_file)
    code, out, _ = run_cli(["index", "add", col, str(docs)], capsys, monkeypatch)
    assert code == 1 and "added 2, updated 0, skipped 2, failed 4;" in out
    assert sorted(stored(col)) == sorted(GOOD)


def test_files_and_records_are_told_apart(col: str, tmp_path: Path, capsys, monkeypatch) -> None:
    lines = write(tmp_path / "lines.txt", "first line\nsecond line\n")
    # a .txt alone is one record per line (as before); --format files makes it one document
    code, out, _ = run_cli(["index", "add", col, str(lines)], capsys, monkeypatch)
    assert code == 0 and "added 2" in out
    code, out, _ = run_cli(["index", "add", col, str(lines), "--format", "files"], capsys, monkeypatch)
    assert code == 0 and "added 1, updated 0, skipped 0, failed 0" in out
    assert stored(col)["lines.txt"][0] == "first line\nsecond line\n"
    # several explicit document files; a .txt beside them is a document too
    page = write(tmp_path / "a.html", "<p>Hello</p>")
    code, out, _ = run_cli(["index", "add", col, str(page), str(lines)], capsys, monkeypatch)
    assert code == 0 and "added 1, updated 0, skipped 1, failed 0" in out
    records = write(tmp_path / "r.jsonl", '{"text": "x"}\n')
    code, _, err = run_cli(["index", "add", col, str(records), str(tmp_path)], capsys, monkeypatch)
    assert code == 2 and error_lines(err) == [
        f"error: {records} holds records and {tmp_path} is a document folder: add them in separate runs"
    ]
    code, _, err = run_cli(["index", "add", col, str(tmp_path), "--format", "jsonl"], capsys, monkeypatch)
    assert code == 2 and "is a folder" in err


def test_explicit_bad_paths(col: str, tmp_path: Path, capsys, monkeypatch) -> None:
    good = write(tmp_path / "ok.md", "Fine.\n")
    other = write(tmp_path / "other" / "ok.md", "Same id.\n")
    big = write(tmp_path / "big.md", "x" * 3000)
    args = [str(tmp_path / "missing.pdf"), str(good), str(other), str(big), "--max-file-mb", "0.001"]
    code, out, err = run_cli(["index", "add", col, "--format", "files", *args], capsys, monkeypatch)
    assert code == 1 and "added 1, updated 0, skipped 0, failed 3" in out
    lines = error_lines(err)
    assert lines[0] == f"error: {tmp_path / 'missing.pdf'}: no such file or folder"
    assert lines[1].startswith(f"error: {other}: its id 'ok.md' is already the id of {good}")
    assert lines[2] == f"error: {big}: 3000 bytes, over the 1048 bytes limit"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(["index", "add", col, str(empty)], capsys, monkeypatch)
    assert (
        code == 2
        and "no .txt, .md, .markdown, .html, .htm, .pdf, .hwp, .hwpx, .docx, .pptx, .xlsx files" in err
    )


def test_a_record_that_is_not_utf8_is_one_error_line_and_the_rest_are_added(
    col: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    lines = [f'{{"id": "{i}", "text": "문서 {i}번의 본문"}}' for i in range(10)]
    lines[6] = '{"id": "6", "text": "\\udc80 깨진 문자"}'
    records = write(tmp_path / "docs.jsonl", "\n".join(lines) + "\n")
    code, out, err = run_cli(["index", "add", col, str(records)], capsys, monkeypatch)
    assert code == 1 and "added 9, updated 0, skipped 0, failed 1" in out
    errors = [line for line in error_lines(err) if line.startswith("error:")]
    assert errors == [
        f"error: {records} line 7: not UTF-8 text (a byte that is not UTF-8, or a lone surrogate)"
    ]


def test_an_argument_that_is_not_utf8_is_one_error_line(col: str, capsys, monkeypatch) -> None:
    query = b"\xff\xfe".decode("utf-8", "surrogateescape")  # what Python makes of such bytes in argv
    code, out, err = run_cli(["index", "search", col, query], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert error_lines(err) == ["error: argument 4 is not UTF-8 text: b'??'"]
