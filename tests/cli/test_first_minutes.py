"""What a new user meets in the first minutes of the CLI: Korean text on the English-only default
model is warned about, and `munjang encode` reports its rate with the model load counted."""

from __future__ import annotations

from tests.helpers.cli import run_cli


def test_korean_on_the_default_model_warns_once_and_names_the_multilingual_model(capsys, monkeypatch):
    korean = ["similarity", "주가가 급락했다.", "주식 시장이 폭락했다.", "고양이가 잔다."]
    code, _, err = run_cli(korean, capsys, monkeypatch)
    assert code == 0 and err.count("-m multilingual-e5-small") == 1
    code, _, err = run_cli(["similarity", "A man eats.", "A man is eating food."], capsys, monkeypatch)
    assert code == 0 and "multilingual" not in err  # English on the default: no warning


def test_encode_reports_the_rate_with_the_load_and_the_encoding_alone(tmp_path, capsys, monkeypatch):
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(f"sentence {i}" for i in range(20)) + "\n", encoding="utf-8")
    code, out, err = run_cli(["encode", str(source), "-o", str(tmp_path / "v.npy")], capsys, monkeypatch)
    assert code == 0, err
    assert "20 x 384 in " in out and "with the model load" in out and "encoding alone" in out
