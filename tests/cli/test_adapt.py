"""`munjang adapt tsdae|mlm`: adapts a tiny model on a text file and prints the adapted folder; bad
input is one `error:` line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

import munjang
from tests.helpers.cli import run_cli
from tests.helpers.training import tiny_bert

CORPUS = (
    "보험금 청구는 사고가 난 날부터 삼 년 안에 해야 한다. 계약자는 보험료를 매달 낸다.\n"
    "The policy covers hospital stays.\n"
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("tiny"), dropout=0.0)


@pytest.mark.parametrize("method", ["mlm", "tsdae"])
def test_adapts_and_prints_the_encoder_folder(
    method: str,
    tiny: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    args = ["adapt", method, "--model", str(tiny), "--corpus", str(corpus), "--output", str(tmp_path / "run")]
    code, out, err = run_cli(
        [*args, "--steps", "2", "--max-seq-length", "16", "--no-split-sentences"], capsys, monkeypatch
    )
    assert code == 0, err
    folder = Path(out.strip())
    assert folder == tmp_path / "run" / "final"
    assert f"{method}: 2 sentences" in err and "done: 2 steps" in err
    assert munjang.load_encoder(folder, device="cpu").encode(["보험"]).shape == (1, 32)


def test_bad_input_is_one_error_line(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    out = str(tmp_path / "run")
    code, _, err = run_cli(["adapt", "simcse", "--corpus", str(corpus), "--output", out], capsys, monkeypatch)
    assert code == 2 and err.strip() == "error: unknown adaptation method 'simcse'; choose from tsdae, mlm"
    missing = str(tmp_path / "nope.txt")
    code, _, err = run_cli(
        ["adapt", "mlm", "--model", str(tiny), "--corpus", missing, "--output", out], capsys, monkeypatch
    )
    assert code == 2 and err.startswith("error:") and "nope.txt" in err and "Traceback" not in err
