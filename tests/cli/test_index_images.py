"""`munjang index add` of a folder of images and `munjang index search --image` on a tiny CLIP: a broken
image is one `error:` line and the others are added; a second add resumes; image and text queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.tiny_clip import save_st_clip, write_images


@pytest.fixture(scope="module")
def clip_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_st_clip(tmp_path_factory.mktemp("clip") / "st")


def test_index_a_folder_of_images(clip_folder: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    pics = tmp_path / "pics"
    files = write_images(pics, 3) + write_images(pics / "more", 2, suffix=".jpg")
    (pics / "broken.webp").write_bytes(b"RIFF0000WEBP broken")
    (pics / "notes.bin").write_bytes(b"ignored: not an image suffix")
    col = str(tmp_path / "col")
    code, out, _ = run_cli(["index", "create", col, "--model", str(clip_folder)], capsys, monkeypatch)
    assert code == 0 and "16-d" in out
    code, out, err = run_cli(["index", "add", col, str(pics)], capsys, monkeypatch)
    assert code == 1 and "added 5 images" in out and "failed 1" in out
    assert err.count("error:") == 1 and "broken.webp" in err and "Traceback" not in err
    code, out, _ = run_cli(["index", "add", col, str(pics)], capsys, monkeypatch)
    assert "added 0 images" in out and "skipped 5" in out

    args = ["index", "search", col, "--image", str(files[3]), "--query", "the cat", "-k", "2", "--json"]
    code, out, _ = run_cli(args, capsys, monkeypatch)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["query"] for r in rows] == ["the cat", f"image {files[3]}"]
    assert rows[1]["results"][0]["id"] == "more/image0.jpg"
    assert rows[1]["results"][0]["metadata"]["file"] == "image0.jpg"

    code, _, err = run_cli(
        ["index", "search", col, "--image", str(pics / "missing.png")], capsys, monkeypatch
    )
    assert code != 0 and err.startswith("error:") and "missing.png" in err and "Traceback" not in err
    code, _, err = run_cli(["index", "search", col], capsys, monkeypatch)
    assert code != 0 and "--image" in err
