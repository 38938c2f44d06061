"""`munjang index add` of a folder of office files beside broken ones: each broken file one error line,
the rest added with their outline; an add that stops mid-way keeps what it committed and a rerun
resumes; a hit says where it lies ("p. 1, 표 1")."""

from __future__ import annotations

from pathlib import Path

import pytest

from munjang.search.collection.collection import Collection
from munjang.search.collection.sections import describe, location
from tests.helpers import hostile_files as hostile
from tests.helpers import office_files as office
from tests.helpers.cli import run_cli
from tests.helpers.files import write

GOOD = {
    "a/plan.hwp": office.hwp(office.SAMPLE),
    "a/plan.hwpx": office.hwpx(office.SAMPLE),
    "b/plan.docx": office.docx(office.SAMPLE),
    "b/staff.xlsx": office.xlsx({"직원": [["이름", "부서"], ["김철수", "총무과"]]}),
    "c/deck.pptx": office.pptx([{"title": "예산", "lines": ["예산은 두 해에 나뉜다."], "notes": "짧게."}]),
    "c/guide.md": "# 안내\n\n서울은 대한민국의 수도이다.\n",
}
BAD = {
    "a/locked.hwp": (office.hwp(office.SAMPLE, flags=0x3), "encrypted HWP"),
    "a/drm.hwp": (office.hwp(office.SAMPLE, flags=0x11), "DRM-protected HWP"),
    "b/zero.docx": (b"", "empty file"),
    "b/broken.hwpx": (office.hwpx(office.SAMPLE)[:300], "corrupt HWPX"),
    "b/version.docx": (hostile.zip_version(office.docx(office.SAMPLE)), "unsupported DOCX zip"),
    "c/span.docx": (hostile.docx_grid_span(), "max_columns"),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    for name, data in GOOD.items():
        write(docs / name, data)
    for name, (data, _) in BAD.items():
        write(docs / name, data)
    return docs


@pytest.fixture
def col(tmp_path: Path, capsys, monkeypatch) -> str:
    where = str(tmp_path / "col")
    assert run_cli(["index", "create", where], capsys, monkeypatch)[0] == 0
    return where


def stored(where: str) -> dict[str, dict]:
    with Collection.open(Path(where), readonly=True) as c:
        return {d.id: d.metadata for d in c.get(list(c.ids())) if d is not None}


def test_mixed_folder(col: str, folder: Path, capsys, monkeypatch) -> None:
    code, out, err = run_cli(["index", "add", col, str(folder)], capsys, monkeypatch)
    assert code == 1 and "added 6, updated 0, skipped 0, failed 6;" in out
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == len(BAD) and "Traceback" not in err
    for name, (_, message) in BAD.items():
        assert any(name in line and message in line for line in lines), name
    meta = stored(col)
    assert sorted(meta) == sorted(GOOD)
    assert meta["a/plan.hwp"]["format"] == "hwp" and meta["a/plan.hwp"]["pages"] == 2
    assert meta["c/deck.pptx"]["slides"] == 1
    with Collection.open(Path(col), readonly=True) as c:
        hit = next(h for h in c.search("장비비 2025년 예산", k=10, unit="passage") if h.id == "a/plan.hwpx")
        assert "구분: 장비비" in hit.text and describe(location(hit.metadata, hit.start)) == "p. 1, 표 1"
    code, out, _ = run_cli(["index", "add", col, str(folder)], capsys, monkeypatch)
    assert code == 1 and "added 0, updated 0, skipped 6, failed 6;" in out


def test_a_failure_mid_way_keeps_what_was_committed(col: str, folder: Path, capsys, monkeypatch) -> None:
    import munjang.ingest

    read_file = munjang.ingest.read_file
    seen: list[Path] = []

    def failing(path: Path, *args, **kwargs):
        seen.append(path)
        if len(seen) == 5:  # a reader bug, not a ReadError: the add stops
            raise RuntimeError("reader crashed")
        return read_file(path, *args, **kwargs)

    monkeypatch.setattr(munjang.ingest, "read_file", failing)
    with pytest.raises(RuntimeError, match="reader crashed"):
        run_cli(["index", "add", col, str(folder), "--commit-every", "2"], capsys, monkeypatch)
    # in order: a/drm.hwp, a/locked.hwp (errors), a/plan.hwp, a/plan.hwpx (committed), b/broken.hwpx (crash)
    assert sorted(stored(col)) == ["a/plan.hwp", "a/plan.hwpx"]
    monkeypatch.setattr(munjang.ingest, "read_file", read_file)
    code, out, _ = run_cli(["index", "add", col, str(folder)], capsys, monkeypatch)
    assert code == 1 and "added 4, updated 0, skipped 2, failed 6;" in out
    assert sorted(stored(col)) == sorted(GOOD)


def test_missing_reader_library_is_one_file_s_error(col: str, folder: Path, capsys, monkeypatch) -> None:
    import munjang._util.extras

    real = munjang._util.extras.importlib.import_module

    def without_pptx(name: str, *args, **kwargs):
        if name == "pptx":
            raise ImportError("no pptx")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(munjang._util.extras.importlib, "import_module", without_pptx)
    code, out, err = run_cli(["index", "add", col, str(folder)], capsys, monkeypatch)
    assert code == 1 and "added 5, updated 0, skipped 0, failed 7;" in out
    assert any("deck.pptx" in line and "pip install 'munjang[files]'" in line for line in err.splitlines())
